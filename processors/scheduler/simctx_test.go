package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lovoo/goka"
)

// This file is the simulation's goka: a goka.Context that runs one callback
// on a table (a partition store, or a map for the clock) and records what the
// callback produced, so the simulation decides what reaches Kafka (all of
// it on a commit, a prefix per destination on a crash).

// simTable is the state a callback reads and writes: storage.Storage's
// key-value part.
type simTable interface {
	Get(key string) ([]byte, error)
	Set(key string, value []byte) error
	Delete(key string) error
}

// simMapTable is an in-memory table (the clock group's).
type simMapTable map[string][]byte

func (m simMapTable) Get(key string) ([]byte, error) { return m[key], nil }
func (m simMapTable) Set(key string, value []byte) error {
	m[key] = append([]byte(nil), value...)
	return nil
}
func (m simMapTable) Delete(key string) error { delete(m, key); return nil }

// simOutKind is where one output of a callback goes.
type simOutKind int

const (
	simOutTable simOutKind = iota // the table changelog (value nil: a delete)
	simOutLoop                    // the group's loopback topic
	simOutEmit                    // an output stream (Topic says which)
)

// simOut is one record a callback produced (asynchronously, in goka).
type simOut struct {
	Kind  simOutKind
	Topic string
	Key   string
	Value []byte
}

// simFailure is what Fail panics with (goka panics out of the callback too).
type simFailure struct{ err error }

// simCtx implements goka.Context for one delivery of one input record.
type simCtx struct {
	topic     goka.Stream
	group     goka.Group
	key       string
	partition int32
	offset    int64
	ts        time.Time
	table     simTable
	ctx       context.Context

	outs      []simOut
	tableErr  error // a failed store operation (goka fails the partition)
	deferred  int   // DeferCommit calls
	done      int   // deferred commits completed
	commitErr error // first error a deferred commit completed with
	// durable: the outputs before it include table writes the changelog
	// has acknowledged (Config.Durable, simDurable): a crash keeps every
	// table write among them.
	durable int
	// durables is durable after each Durable call, in order.
	durables []int
	// durableErr, when set, is what every Durable call returns: a write
	// an earlier callback made failed (clients.WriteAcks reports it).
	durableErr error
}

// simDurable is Config.Durable in the harnesses: the table writes of key
// the callback has made so far have reached the changelog (with the writes
// before them: one changelog partition, written in order).
func simDurable(ctx goka.Context, key string) error {
	c, ok := ctx.(*simCtx)
	if !ok {
		return fmt.Errorf("sim: Durable with a %T", ctx)
	}
	if c.durableErr != nil {
		return c.durableErr
	}
	for i := len(c.outs) - 1; i >= c.durable; i-- {
		if c.outs[i].Kind == simOutTable && c.outs[i].Key == key {
			c.durable = i + 1
			break
		}
	}
	c.durables = append(c.durables, c.durable)
	return nil
}

var _ goka.Context = (*simCtx)(nil)

func (c *simCtx) Topic() goka.Stream       { return c.topic }
func (c *simCtx) Key() string              { return c.key }
func (c *simCtx) Partition() int32         { return c.partition }
func (c *simCtx) Offset() int64            { return c.offset }
func (c *simCtx) Group() goka.Group        { return c.group }
func (c *simCtx) Headers() goka.Headers    { return nil }
func (c *simCtx) Timestamp() time.Time     { return c.ts }
func (c *simCtx) Context() context.Context { return c.ctx }

func (c *simCtx) Value() any {
	v, err := c.table.Get(c.key)
	if err != nil {
		c.Fail(fmt.Errorf("sim: reading %q: %w", c.key, err))
	}
	if v == nil {
		return nil
	}
	return v
}

func (c *simCtx) SetValue(value any, _ ...goka.ContextOption) {
	b, ok := value.([]byte)
	if !ok || b == nil {
		c.Fail(fmt.Errorf("sim: SetValue of %T", value))
	}
	b = append([]byte(nil), b...)
	if err := c.table.Set(c.key, b); err != nil {
		c.Fail(fmt.Errorf("sim: storing %q: %w", c.key, err))
	}
	c.outs = append(c.outs, simOut{Kind: simOutTable, Key: c.key, Value: b})
}

func (c *simCtx) Delete(_ ...goka.ContextOption) {
	if err := c.table.Delete(c.key); err != nil {
		c.Fail(fmt.Errorf("sim: deleting %q: %w", c.key, err))
	}
	c.outs = append(c.outs, simOut{Kind: simOutTable, Key: c.key})
}

func (c *simCtx) Emit(topic goka.Stream, key string, value any, _ ...goka.ContextOption) {
	b, _ := value.([]byte)
	c.outs = append(c.outs, simOut{Kind: simOutEmit, Topic: string(topic), Key: key, Value: append([]byte(nil), b...)})
}

func (c *simCtx) Loopback(key string, value any, _ ...goka.ContextOption) {
	b, _ := value.([]byte)
	c.outs = append(c.outs, simOut{Kind: simOutLoop, Key: key, Value: append([]byte(nil), b...)})
}

func (c *simCtx) Join(goka.Table) any           { panic("sim: Join is not used by the scheduler") }
func (c *simCtx) Lookup(goka.Table, string) any { panic("sim: Lookup is not used by the scheduler") }

func (c *simCtx) Fail(err error) { panic(simFailure{err}) }

func (c *simCtx) DeferCommit() func(error) {
	c.deferred++
	return func(err error) {
		c.done++
		if err != nil && c.commitErr == nil {
			c.commitErr = err
		}
	}
}

// errSimNotCommitted: the callback left its input uncommitted.
var errSimNotCommitted = errors.New("sim: input not committed")

// run calls cb and reports whether goka would commit the input: no failure,
// every deferred commit completed without an error.
func (c *simCtx) run(cb func(goka.Context, any), msg []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(simFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	cb(c, msg)
	if c.commitErr != nil {
		return fmt.Errorf("%w: %w", errSimNotCommitted, c.commitErr)
	}
	if c.done < c.deferred {
		return fmt.Errorf("%w: %d deferred commits never completed", errSimNotCommitted, c.deferred-c.done)
	}
	return nil
}
