package scheduler

import (
	"errors"

	"github.com/lovoo/goka"

	"github.com/chronos-scheduler/chronos/codecs"
)

// Every callback ends in resolve: it reads its input, decides (a pure
// function), writes and emits what the decision says, and hands the error it
// got, if any, to resolve, which settles it by its kind. The kinds, and what
// becomes of the input:
//
//   - invalid input (a *codecs.Error, or an error wrapped by invalid): the
//     input can never be applied. It goes to chronos-rejects with the reason
//     (processors/inputs), is committed, and the partition goes on.
//   - revoked (errRevoked): the partition is going away. The input is left
//     uncommitted for the next owner; the callback returns normally.
//   - stale (errStale): an internal loopback about a job version that no
//     longer exists, or whose record cannot be read. Nothing to do; it is
//     committed and logged at debug level.
//   - anything else is transient (a store or producer error, the fence's
//     errFrozen): the input must not be committed, or its fires are lost.
//     The commit is withheld and the partition fails and restarts, so the
//     input is consumed again.

// outcome is what resolve does with an input.
type outcome int

const (
	outcomeApplied  outcome = iota // no error: committed
	outcomeRejected                // invalid input: to chronos-rejects, committed
	outcomeWithheld                // revoked: left uncommitted, the partition goes on
	outcomeDropped                 // stale loopback: committed, nothing done
	outcomeFailed                  // transient: uncommitted, the partition restarts
)

func (o outcome) String() string {
	switch o {
	case outcomeApplied:
		return "applied"
	case outcomeRejected:
		return "rejected"
	case outcomeWithheld:
		return "withheld"
	case outcomeDropped:
		return "dropped"
	default:
		return "failed"
	}
}

// errStale marks loopbacks that no longer apply.
var errStale = errors.New("scheduler: stale loopback")

// invalidInput marks an error as the input's fault (it is rejected), for
// errors that are not a *codecs.Error, such as an undecodable table value.
// Its message is the wrapped error's, so the reject's reason is unchanged.
type invalidInput struct{ err error }

func (e *invalidInput) Error() string { return e.err.Error() }
func (e *invalidInput) Unwrap() error { return e.err }

// invalid marks err as invalid input (nil stays nil).
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return &invalidInput{err}
}

// classify returns the outcome err calls for. It is the one place that maps
// an error to what becomes of an input.
func classify(err error) outcome {
	var ce *codecs.Error
	var in *invalidInput
	switch {
	case err == nil:
		return outcomeApplied
	case errors.Is(err, errRevoked):
		return outcomeWithheld
	case errors.Is(err, errStale):
		return outcomeDropped
	case errors.As(err, &ce), errors.As(err, &in):
		return outcomeRejected
	default:
		return outcomeFailed
	}
}

// resolve ends a callback whose input is raw (nil for a null value): it
// settles err by its kind (see classify) and counts a command (op not
// empty) as applied or rejected. It returns the outcome. On outcomeFailed
// it does not return while the processor runs (goka panics out of Fail).
func (s *Scheduler) resolve(ctx goka.Context, raw []byte, op string, err error) outcome {
	o := classify(err)
	switch o {
	case outcomeApplied:
		if op != "" {
			s.cfg.Metrics.command(op, "applied")
		}
	case outcomeRejected:
		s.reject(ctx, raw, err)
		if op != "" {
			s.cfg.Metrics.command(op, "rejected")
		}
	case outcomeWithheld:
		uncommitted(ctx, err)
	case outcomeDropped:
		s.cfg.Logger.Debug("dropped an input that no longer applies", "key", ctx.Key(), "partition", ctx.Partition(), "offset", ctx.Offset(), "err", err)
	case outcomeFailed:
		failed(ctx, err)
	}
	return o
}

// errRevoked marks inputs left uncommitted because their partition is going away.
var errRevoked = errors.New("scheduler: partition revoked; input left to the next owner")

// uncommitted makes goka never commit the current input: a deferred commit
// completed with an error fails the message instead of acknowledging it.
func uncommitted(ctx goka.Context, err error) { ctx.DeferCommit()(err) }

// failed withholds the commit of an input that could not be handled, or its
// fires are lost. ctx.Fail stops the partition (goka panics out of the
// callback) while the processor runs; once goka's context is cancelled (a
// rebalance, a shutdown) it only records the error and goka would commit
// the input, so the commit is withheld explicitly as well. The fence calls
// it directly (errFrozen is transient: classify says failed).
func failed(ctx goka.Context, err error) {
	uncommitted(ctx, err)
	ctx.Fail(err)
}
