package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chunkConn is a net.Conn whose Read returns the next 1..maxChunk bytes of r.
type chunkConn struct {
	net.Conn
	r        *bytes.Reader
	rng      *rand.Rand
	maxChunk int
	closed   bool
}

func (c *chunkConn) Read(p []byte) (int, error) {
	k := min(len(p), 1+c.rng.IntN(c.maxChunk))
	return c.r.Read(p[:k])
}
func (c *chunkConn) Close() error         { c.closed = true; return nil }
func (c *chunkConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestCapConnFollowsFraming feeds generated streams of frames, read back in
// random pieces: frames up to the cap pass byte for byte; the first frame
// over it fails the read and closes the connection, and nothing of its
// size prefix is returned.
func TestCapConnFollowsFraming(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(18, 6))
	const maxSize = 1000
	for i := range 500 {
		var stream bytes.Buffer
		okFrames := rng.IntN(6)
		for range okFrames {
			size := rng.IntN(maxSize + 1)
			stream.Write(binary.BigEndian.AppendUint32(nil, uint32(size)))
			stream.Write(bytes.Repeat([]byte{byte(size)}, size))
		}
		valid := stream.Len()
		bad := rng.IntN(2) == 0
		if bad {
			size := uint32(maxSize + 1 + rng.IntN(1<<30))
			if rng.IntN(4) == 0 {
				size = 0x47455420 // "GET "
			}
			stream.Write(binary.BigEndian.AppendUint32(nil, size))
			stream.WriteString("rest")
		}
		cc := &chunkConn{r: bytes.NewReader(stream.Bytes()), rng: rng, maxChunk: 1 + rng.IntN(64)}
		c := &capConn{Conn: cc, max: maxSize}
		got, err := io.ReadAll(c)
		if bad {
			require.ErrorIs(t, err, ErrFrameTooLarge, "case %d", i)
			require.True(t, cc.closed, "case %d", i)
			require.LessOrEqual(t, len(got), valid+3, "case %d: at most 3 bytes of the bad prefix pass", i)
			require.True(t, bytes.Equal(stream.Bytes()[:len(got)], got), "case %d", i)
			require.GreaterOrEqual(t, len(got), valid-64, "case %d", i)
		} else {
			require.NoError(t, err, "case %d", i)
			require.True(t, bytes.Equal(stream.Bytes(), got), "case %d", i)
		}
	}
}

// TestBrokerRefusesHTTPOnItsPort sends an HTTP request on three
// connections to the broker (its first 4 bytes read as a 1.2 GB frame):
// each connection is closed, the process does not allocate the frames, and
// the broker still serves Kafka clients.
func TestBrokerRefusesHTTPOnItsPort(t *testing.T) {
	b, err := Start(Options{Partitions: 1})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 3 {
		c, err := net.Dial("tcp", b.Addrs()[0])
		require.NoError(t, err)
		_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
		_, err = io.ReadAll(c)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the broker left the connection open")
		c.Close()
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "allocated for the declared frames")

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still serving")}).FirstErr())
}

// TestBrokerCapsRequestBytes: with a 64 KiB cap, a produce request that
// fits passes; a connection declaring a frame one byte over the cap is
// closed.
func TestBrokerCapsRequestBytes(t *testing.T) {
	const maxReq = 64 << 10
	b, err := Start(Options{Partitions: 1, MaxRequestBytes: maxReq})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := make([]byte, 48<<10) // incompressible
	for i := range value {
		value[i] = byte(rand.Uint32())
	}
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr())

	c, err := net.Dial("tcp", b.Addrs()[0])
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(binary.BigEndian.AppendUint32(nil, maxReq+1))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadAll(c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the broker left the connection open")
}

// TestIdleFramesDoNotAddUp (adversary 18e's
// TestAdversary18eFramesUnderTheCapAddUp, fixed: capConn hands kfake a
// frame only once its body has arrived): the promise (issue 18 item 6
// and docs/security.md, embedded broker: a connection declaring a frame
// over 100 MiB is closed "before the broker allocates it"; issue 18: no
// valid input can exhaust memory). The cap is per connection and there is
// no limit on connections, on the bytes of frames in flight, or on how
// long a frame may take to arrive: each loopback connection that sends a
// 4-byte size prefix of 100 MiB (and then nothing) makes kfake allocate
// 100 MiB and hold it. Measured: 8 such connections, 32 bytes sent in all,
// hold 800 MiB of live heap (838,857,288 bytes) in `chronos dev`'s process until they close;
// the 1 GiB the manifests give a pod is passed with 11.
func TestIdleFramesDoNotAddUp(t *testing.T) {
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
	before := int64(heap())
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
	var held int64
	for range 50 { // the broker's readers allocate as they get the prefixes
		time.Sleep(100 * time.Millisecond)
		if held = int64(heap()) - before; held >= conns*(DefaultMaxRequestBytes-1<<20) {
			break
		}
	}
	t.Logf("%d connections, %d bytes sent: %.0f MiB of live heap held", conns, 4*conns, float64(held)/(1<<20))
	require.Less(t, held, int64(2*DefaultMaxRequestBytes),
		"frames under the cap add up: each idle connection holds 100 MiB")
}
