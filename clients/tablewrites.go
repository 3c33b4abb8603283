package clients

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lovoo/goka"
)

// ErrWriteFailed is the error a callback stops with when one of its table
// writes failed (see StrictTableWrites).
var ErrWriteFailed = errors.New("clients: a table write may have failed; the input is left uncommitted for the next owner")

// StrictTableWrites returns a goka option that makes a failed table write
// stop the callback and leave its input uncommitted while the partition is
// stopping (a rebalance, a shutdown, a fatal store error), as goka itself
// does while it runs. failed counts the failed writes of the processor's
// stores (store.Options.FailedWrites).
//
// goka v1.1.16's SetValue and Delete report a failed local write through
// ctx.Fail, which panics out of the callback only while the partition's
// context is live; once it is cancelled, Fail only records the error and
// returns, so the callback goes on as if the write had been made, and
// goka commits the input when the callback's emits are acknowledged
// (TestTableWriteFailingWhileStoppingLeavesTheInputUncommitted). A put
// command, a fold of a job's history or a pass of the scheduler could then
// be committed without its table write, and the next owner would never
// see it: a full disk makes the first store that fails stop the instance
// while the others' writes fail too. With this option, a write made while
// the context is cancelled, during which failed grew, stops the callback:
// the input's commit is withheld (a deferred commit completed with the
// error) and the callback ends with a panic goka recovers, as ctx.Fail does
// on a live context. That is a crash at that point of the callback, which
// every processor already survives: its input is delivered again to the
// next owner. failed is shared by an instance's stores, so another
// store's failure at the same moment can stop a callback whose own write
// succeeded; only on a cancelled context, i.e. while the partition goes
// away anyway. On a live context nothing changes (goka stops a callback
// whose write failed; one whose write succeeded goes on, adversary round
// 37), and a write that succeeds on a cancelled context while no store
// fails goes on too (a fan-out chunk in flight at a revocation finishes).
// goka keeps one context wrapper: the instance uses GuardCallbacks, which
// is this and CommitOrder's hold.
func StrictTableWrites(failed *atomic.Uint64) goka.ProcessorOption {
	return GuardCallbacks(failed, nil)
}

// gokaContext names the embedded goka.Context: embedded as goka.Context, its
// field name would hide the interface's Context method.
type gokaContext = goka.Context

type strictWrites struct {
	gokaContext
	failed *atomic.Uint64
	held   heldInput // the callback's held commit (GuardCallbacks with a CommitOrder)
}

func (c strictWrites) SetValue(value any, opts ...goka.ContextOption) {
	n := c.failed.Load()
	c.gokaContext.SetValue(value, opts...)
	c.stopIfFailed(n, "write")
}

func (c strictWrites) Delete(opts ...goka.ContextOption) {
	n := c.failed.Load()
	c.gokaContext.Delete(opts...)
	c.stopIfFailed(n, "delete")
}

// stopIfFailed stops the callback if its partition's context is cancelled
// and a store write failed since failed was n (this one, goka having only
// recorded its error, or another store's at the same moment).
func (c strictWrites) stopIfFailed(n uint64, what string) {
	cerr := c.Context().Err()
	if cerr == nil || c.failed.Load() == n {
		return
	}
	err := fmt.Errorf("%w (a store write failed during the %s of key %q while the partition was stopping: %v)", ErrWriteFailed, what, c.Key(), cerr)
	c.DeferCommit()(err)
	panic(err)
}
