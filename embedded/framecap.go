package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
// as 1.2 GB), so the cap sits in front of it, in the connection's Read,
// which also holds a frame back until its body has arrived (capConn).
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

// capConn hands the broker whole request frames (a big-endian int32 size,
// then that many bytes): it reads a frame's size prefix, refuses it over
// the cap, and passes the prefix on only once the frame's body has
// arrived, read into a buffer that grows with the bytes actually received.
// kfake allocates a frame's whole declared size as soon as it reads the
// prefix, so a cap per frame alone let idle connections add up (adversary
// 18e: eight connections that each sent a 4-byte prefix of 100 MiB held
// 800 MiB); now memory follows what clients send. Read is called by one
// goroutine at a time (kfake reads a connection sequentially).
type capConn struct {
	net.Conn
	max   uint32
	frame []byte // the frame being handed to the broker, prefix included
	off   int    // bytes of frame handed so far
}

// Read returns bytes of the current whole frame, reading the next one
// when it is done; it fails, closing the connection, when a frame's size
// prefix is over the cap: the bytes of that prefix never reach the broker.
func (c *capConn) Read(p []byte) (int, error) {
	if c.frame == nil {
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.frame[c.off:])
	c.off += n
	if c.off == len(c.frame) {
		c.frame, c.off = nil, 0 // a big frame's buffer is not kept
	}
	return n, nil
}

// next reads the next whole frame into c.frame.
func (c *capConn) next() error {
	var size [4]byte
	if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:]) // a negative int32 is over any cap
	if n > c.max {
		c.Conn.Close()
		return fmt.Errorf("%w: %d bytes declared by %s, cap %d", ErrFrameTooLarge, n, c.RemoteAddr(), c.max)
	}
	var buf bytes.Buffer
	buf.Write(size[:])
	if _, err := io.CopyN(&buf, c.Conn, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	c.frame, c.off = buf.Bytes(), 0
	return nil
}
