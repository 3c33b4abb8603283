package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// DefaultMaxRequestBytes is the largest request frame the embedded broker
// accepts by default: 100 MiB, Apache Kafka's socket.request.max.bytes
// default and the request limit of franz-go and sarama clients, so every
// request a real broker takes passes.
const DefaultMaxRequestBytes = 100 << 20

// ErrFrameTooLarge is returned to the broker's reader, and the connection
// closed, when a client declares a request frame over the cap.
var ErrFrameTooLarge = errors.New("embedded: request frame larger than the cap")

// capListen returns a listen function for kfake whose connections refuse
// request frames over max bytes. kfake allocates a request's whole size as
// soon as it reads the 4-byte size prefix (an HTTP request's "GET " reads
// as 1.2 GB), so the cap sits in front of it, in the connection's Read.
func capListen(max uint32) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		return capListener{Listener: ln, max: max}, nil
	}
}

type capListener struct {
	net.Listener
	max uint32
}

func (l capListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &capConn{Conn: c, max: l.max}, nil
}

// capConn follows the Kafka request framing (a big-endian int32 size, then
// that many bytes) in the bytes it reads, without buffering them. Read is
// called by one goroutine at a time (kfake reads a connection sequentially).
type capConn struct {
	net.Conn
	max  uint32
	size [4]byte
	have int    // bytes of size read so far
	left uint64 // bytes of the current frame's body still to come
}

// Read reads from the connection and fails, closing it, when a frame's size
// prefix is over the cap: the bytes of that prefix never reach the broker.
func (c *capConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	for i := 0; i < n; {
		if c.left > 0 {
			k := min(uint64(n-i), c.left)
			c.left -= k
			i += int(k)
			continue
		}
		c.size[c.have] = p[i]
		c.have++
		i++
		if c.have == len(c.size) {
			c.have = 0
			size := binary.BigEndian.Uint32(c.size[:]) // a negative int32 is over any cap
			if size > c.max {
				c.Conn.Close()
				return 0, fmt.Errorf("%w: %d bytes declared by %s, cap %d", ErrFrameTooLarge, size, c.RemoteAddr(), c.max)
			}
			c.left = uint64(size)
		}
	}
	return n, err
}
