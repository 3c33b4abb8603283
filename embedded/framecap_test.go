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
