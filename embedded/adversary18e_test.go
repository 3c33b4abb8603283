//go:build adversary18e

// Adversary round 5 of issue 18 (bounded resources), embedded broker.
//
// Run: go test -tags adversary18e -count=1 -v -run TestAdversary18e ./embedded/
package embedded

import (
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdversary18eFramesUnderTheCapAddUp: broken promise (issue 18 item 6
// and docs/security.md, embedded broker: a connection declaring a frame
// over 100 MiB is closed "before the broker allocates it"; issue 18: no
// valid input can exhaust memory). The cap is per connection and there is
// no limit on connections, on the bytes of frames in flight, or on how
// long a frame may take to arrive: each loopback connection that sends a
// 4-byte size prefix of 100 MiB (and then nothing) makes kfake allocate
// 100 MiB and hold it. Measured: 8 such connections, 32 bytes sent in all,
// hold 800 MiB of live heap (838,857,288 bytes) in `chronos dev`'s process until they close;
// the 1 GiB the manifests give a pod is passed with 11.
func TestAdversary18eFramesUnderTheCapAddUp(t *testing.T) {
	const conns = 8
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	defer b.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var cs []net.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", b.Addrs()[0])
		require.NoError(t, err)
		cs = append(cs, c)
		_, err = c.Write(binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes))
		require.NoError(t, err)
	}
	var held uint64
	for range 50 { // the broker's readers allocate as they get the prefixes
		time.Sleep(100 * time.Millisecond)
		if held = heap() - before; held >= conns*(DefaultMaxRequestBytes-1<<20) {
			break
		}
	}
	t.Logf("%d connections, %d bytes sent: %.0f MiB of live heap held", conns, 4*conns, float64(held)/(1<<20))
	require.Less(t, held, uint64(2*DefaultMaxRequestBytes),
		"frames under the cap add up: each idle connection holds 100 MiB")
}
