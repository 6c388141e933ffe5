package fake

import (
	"context"
	"errors"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Calls returns how many times verb was called.
func (f *Driver) Calls(verb Verb) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[verb]
}

// TotalCalls returns how many driver calls were made, all verbs together:
// a controller in steady state should make none.
func (f *Driver) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// ResetCalls zeroes the call counts.
func (f *Driver) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.calls)
}

// Fault makes calls fail or wait.
type Fault struct {
	// Verb selects the method ("": every method). Faults never apply to
	// Events: use DropEvents.
	Verb Verb
	// Ref restricts the fault to calls about this image reference,
	// container name or container ID ("": any).
	Ref string
	// Delay is waited first (the caller's ctx can cut it short).
	Delay time.Duration
	// Err, if set, is then returned. Sentinels such as dd.ErrUnavailable
	// are wrapped into a *dd.Error naming the operation, as the real
	// driver's errors are; a *dd.Error is returned as it is.
	Err error
	// Times is how many calls it applies to (0: until cleared).
	Times int
	// AtStart makes the fault hit CreateContainer after the container is
	// created: starting it fails with Err and the container is removed
	// again, as the real driver does when the daemon refuses to start it
	// (the events are create, then destroy). Delay does not apply.
	AtStart bool
	// Sticks, with AtStart, leaves the container created, and every later
	// start of it fails with Err too: the daemon went away during the start,
	// so the removal failed as well, and the task it left behind makes every
	// start after its restart fail ("task ... already exists").
	Sticks bool
}

type fault struct {
	Fault
	left int // remaining applications when Times > 0
}

// Inject adds a fault; clear removes it.
func (f *Driver) Inject(ft Fault) (clear func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &fault{Fault: ft, left: ft.Times}
	f.faults = append(f.faults, e)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.faults {
			if x == e {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every fault and exec rule.
func (f *Driver) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
	f.execRules = nil
}

// enter counts a call and applies the first matching fault. refs are the
// names the call is about (the argument, and the resolved container's
// name and ID when known). A Delay is cut short by the verb's deadline, as
// the real driver's calls are (dd.Bound).
func (f *Driver) enter(ctx context.Context, verb Verb, refs ...string) error {
	budget := f.callTimeout
	switch verb {
	case VerbCreateContainer:
		budget = 2 * f.callTimeout
	case VerbPullImage, VerbExec, VerbEvents:
		budget = 0 // their own timeouts
	}
	return f.enterWithin(ctx, verb, budget, refs...)
}

func (f *Driver) enterWithin(ctx context.Context, verb Verb, budget time.Duration, refs ...string) error {
	f.mu.Lock()
	f.calls[verb]++
	ft := f.matchFault(verb, refs, false)
	f.mu.Unlock()
	ref := ""
	if len(refs) > 0 {
		ref = refs[0]
	}
	if ft == nil {
		if err := ctx.Err(); err != nil {
			return dd.NewError(ops[verb], ref, kindOfCtx(err), err)
		}
		return nil
	}
	if ft.Delay > 0 {
		bctx, cancel, expired := dd.Bound(ctx, budget)
		defer cancel()
		t := time.NewTimer(ft.Delay)
		defer t.Stop()
		select {
		case <-bctx.Done():
			return expired(dd.NewError(ops[verb], ref, kindOfCtx(bctx.Err()), bctx.Err()), ops[verb], ref)
		case <-t.C:
		}
	}
	if ft.Err == nil {
		return nil
	}
	return faultError(ops[verb], ref, ft.Err)
}

// faultError is a fault's error as the real driver would return it for op.
func faultError(op, ref string, err error) error {
	var de *dd.Error
	if errors.As(err, &de) {
		return err
	}
	e := &dd.Error{Op: op, Ref: ref, Err: err}
	for _, k := range []error{dd.ErrNotFound, dd.ErrConflict, dd.ErrTimeout, dd.ErrUnavailable, dd.ErrPullFailed, dd.ErrInvalid, dd.ErrBusy, dd.ErrRemovalStuck} {
		if errors.Is(err, k) {
			e.Kinds = append(e.Kinds, k)
		}
	}
	return e
}

func kindOfCtx(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return dd.ErrTimeout
	}
	return nil
}

// matchFault finds the first fault for verb about refs, at entry or (atStart)
// at a created container's start. Callers hold f.mu.
func (f *Driver) matchFault(verb Verb, refs []string, atStart bool) *Fault {
	if verb == VerbEvents {
		return nil
	}
	for i, ft := range f.faults {
		if ft.Verb != "" && ft.Verb != verb || ft.AtStart != atStart {
			continue
		}
		if ft.Ref != "" && !contains(refs, ft.Ref) {
			continue
		}
		out := ft.Fault
		if ft.Times > 0 {
			ft.left--
			if ft.left == 0 {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
