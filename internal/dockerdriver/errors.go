package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Sentinel kinds, for errors.Is. An error may be of several kinds: a pull
// that timed out is both ErrPullFailed and ErrTimeout.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrTimeout     = errors.New("timeout")
	ErrUnavailable = errors.New("docker unavailable")
	ErrPullFailed  = errors.New("pull failed")
	ErrInvalid     = errors.New("invalid argument")
	// ErrBusy is an exec refused because an earlier one in the same container
	// timed out and still runs (BusyError).
	ErrBusy = errors.New("busy")
	// ErrRemovalStuck: Docker could not remove the container's root filesystem
	// (a mount still busy, as a daemon restart during the container's exit can
	// leave). The container stays, dead, and every removal fails the same way
	// until what holds the mount lets go; a rename still works.
	ErrRemovalStuck = errors.New("removal stuck")
	// ErrNotRun: a prepared exec's command never ran (its held shell was gone:
	// the connection broke, the container stopped); preparing another is safe.
	ErrNotRun = errors.New("not run")
)

// Error is what every verb returns on failure: what was being done (Op), to
// what (Ref), which kinds of failure it is, and the cause.
type Error struct {
	Op  string // "pull", "create", "inspect", "exec", ...
	Ref string // image reference or container name/ID; may be empty
	// Kinds are the sentinels the error matches with errors.Is.
	Kinds []error
	// Detail is said before the cause, e.g. "timeout after 300s".
	Detail string
	Err    error
}

// NewError builds an *Error of one kind (kind may be nil). Fakes use it to
// produce the errors the real driver would.
func NewError(op, ref string, kind, err error) *Error {
	e := &Error{Op: op, Ref: ref, Err: err}
	if kind != nil {
		e.Kinds = []error{kind}
	}
	return e
}

// Error never returns an empty string: a bare context deadline or an error
// with no text still says what was being done and why.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Op == "" {
		b.WriteString("docker")
	}
	if e.Ref != "" {
		b.WriteString(" ")
		b.WriteString(e.Ref)
	}
	b.WriteString(": ")
	switch {
	case e.Detail != "" && e.Err != nil:
		b.WriteString(e.Detail + ": " + errText(e.Err))
	case e.Detail != "":
		b.WriteString(e.Detail)
	case e.Err != nil:
		b.WriteString(errText(e.Err))
	case len(e.Kinds) > 0:
		b.WriteString(e.Kinds[0].Error())
	default:
		b.WriteString("failed")
	}
	return b.String()
}

func errText(err error) string {
	if s := err.Error(); s != "" {
		return s
	}
	return fmt.Sprintf("%T with no message", err)
}

// Unwrap exposes the kinds and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, len(e.Kinds)+1)
	out = append(out, e.Kinds...)
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// ConflictError says a container name is taken by another container: one
// that is not provably ours, at create, or any other, at a rename. It matches
// ErrConflict. The caller decides what to do (e.g. remove it if the Sandbox its
// labels name no longer exists); the driver never touches it.
type ConflictError struct {
	Name string
	// From is set when a rename found Name taken: the container being renamed.
	From string
	// OwnerLabel and Want are the label and value that would have proved
	// ownership (create only).
	OwnerLabel, Want string
	// Existing is the container holding the name.
	Existing Container
}

func (e *ConflictError) Error() string {
	what := "create " + e.Name
	if e.From != "" {
		what = "rename " + e.From + " to " + e.Name
	}
	msg := fmt.Sprintf("%s: conflict: the name is taken by container %s", what, ShortID(e.Existing.ID))
	if e.OwnerLabel == "" {
		return msg
	}
	got, ok := e.Existing.Labels[e.OwnerLabel]
	have := "it has no " + e.OwnerLabel + " label"
	if ok {
		have = fmt.Sprintf("its %s is %q", e.OwnerLabel, got)
	}
	return fmt.Sprintf("%s, which is not ours (%s, want %q)", msg, have, e.Want)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ShortID is the 12-character form of a container ID that Docker prints.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// wrap classifies err from the moby client (or the transport) into an *Error.
// It returns nil for nil and leaves errors of this package untouched.
func wrap(op, ref string, err error) error {
	if err == nil {
		return nil
	}
	var de *Error
	var ce *ConflictError
	if errors.As(err, &de) || errors.As(err, &ce) {
		return err
	}
	e := &Error{Op: op, Ref: ref, Err: err}
	if k := kindOf(err); k != nil {
		e.Kinds = []error{k}
	}
	return e
}

// kindOf maps moby/containerd errdefs and transport failures to our kinds.
func kindOf(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded), cerrdefs.IsDeadlineExceeded(err):
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return nil // the caller's own doing; errors.Is(err, context.Canceled) still holds
	case cerrdefs.IsNotFound(err):
		return ErrNotFound
	case cerrdefs.IsConflict(err):
		return ErrConflict
	case cerrdefs.IsInvalidArgument(err):
		return ErrInvalid
	case client.IsErrConnectionFailed(err), cerrdefs.IsUnavailable(err), isTransport(err):
		return ErrUnavailable
	case removalStuck(err):
		return ErrRemovalStuck
	}
	return nil
}

// removalStuck reports Docker's words for a root filesystem it could not remove
// (a 500, so the words decide): the graph driver's "driver "overlay2" failed to
// remove root filesystem: ... device or resource busy", or the daemon's "unable to
// remove filesystem for <id>".
func removalStuck(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to remove root filesystem") || strings.Contains(msg, "unable to remove filesystem")
}

// isTransport reports a connection that broke mid-request, as happens when
// the daemon restarts.
func isTransport(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// TimeoutError is the error of an operation that ran out of its own time
// budget (not the caller's): "pull x: timeout after 300s: context deadline exceeded".
func TimeoutError(op, ref string, after time.Duration, kinds ...error) *Error {
	return &Error{
		Op:     op,
		Ref:    ref,
		Kinds:  append(kinds, ErrTimeout),
		Detail: "timeout after " + FormatDuration(after),
		Err:    context.DeadlineExceeded,
	}
}

// BusyError is the error of an exec into container refused at once, without
// starting it, because an earlier exec there, of program, ended as why says
// ("timed out after 10s") and is still running: Docker cannot stop an exec, so a
// caller retrying a slow probe would otherwise pile them up in the container. A
// full container ID is said short (ref already has it whole).
func BusyError(ref, container, program, why string) *Error {
	if len(container) == 64 && strings.Trim(container, "0123456789abcdef") == "" {
		container = ShortID(container)
	}
	return &Error{
		Op:    "exec",
		Ref:   ref,
		Kinds: []error{ErrBusy},
		Detail: fmt.Sprintf("container %s is busy: an earlier exec of %s %s and is still running in it; "+
			"not starting another until it ends", container, program, why),
	}
}

// FormatDuration writes whole seconds as "300s" rather than Go's "5m0s".
func FormatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return d.String()
}

// DefaultCallTimeout bounds a call whose caller set no deadline (inspect, list,
// logs, ping, image presence; twice that for a create, which also starts and
// inspects; a removal gets it on top of its stop timeout). Pulls have their own
// timeout, an exec its spec's, and the event stream none: it is meant to last.
const DefaultCallTimeout = 30 * time.Second

// Bound gives ctx a deadline of budget unless it has one already, so that a daemon
// that accepts a call and never answers cannot hold the caller (a reconcile
// worker, the sweep) forever. expired turns the call's error into a timeout of op
// when it was this budget that ran out: the daemon did not answer in time, so the
// error is both ErrTimeout and ErrUnavailable.
func Bound(ctx context.Context, budget time.Duration) (bounded context.Context, cancel context.CancelFunc, expired func(err error, op, ref string) error) {
	if _, has := ctx.Deadline(); has || budget <= 0 {
		return ctx, func() {}, func(err error, _, _ string) error { return err }
	}
	bounded, cancel = context.WithTimeout(ctx, budget)
	return bounded, cancel, func(err error, op, ref string) error {
		if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
			return TimeoutError(op, ref, budget, ErrUnavailable)
		}
		return err
	}
}

// refusedAtStart reports a start failure the container's configuration causes,
// which fails the same way every time: the runtime refused it (an invalid cgroup
// value such as a CPU quota under 1ms, a missing device or command). Docker
// answers most of these with a 500, so the words decide, not the status.
func refusedAtStart(err error) bool {
	msg := err.Error()
	if strings.Contains(msg, "error gathering device information") {
		return true
	}
	if !strings.Contains(msg, "OCI runtime create failed") {
		return false
	}
	for _, cause := range []string{"invalid argument", "no such file or directory", "executable file not found", "permission denied"} {
		if strings.Contains(msg, cause) {
			return true
		}
	}
	return false
}
