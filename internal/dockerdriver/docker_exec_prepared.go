package dockerdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// HoldRead reads the environment a prepared exec's Run sends on stdin and
// exports it, in sh: the lines heldEnv writes (export NAME='value', each
// quote in the value closed, escaped and reopened, each newline as
// "$_held_nl" between quotes), then a line ".". When stdin ends
// first (Close) it exits 125: the command never ran. The hold script starts
// with it; a command that holds itself (ExecSpec.HoldsItself) in sh may too.
// Its own variables start with heldPrefix, which CheckHeldEnv refuses.
const HoldRead = `_held_nl='
'
_held_s=
while :; do
	IFS= read -r _held_l || exit 125
	[ "$_held_l" = . ] && break
	_held_s="$_held_s$_held_l$_held_nl"
done
eval "$_held_s"`

// holdScript holds the command in "$@" until its environment arrives on stdin
// (HoldRead), then runs it in place of the shell, its stdin /dev/null.
// Note: Run does not half-close stdin; proxies in front of a daemon may take that
// for the end of the whole connection.
const holdScript = HoldRead + `
exec "$@" </dev/null`

// PrepareExec: see Driver. The exec is created and started at once (what costs
// an exec start), as a shell that reads the environment from stdin (or as the
// command itself, when it holds itself).
func (d *Docker) PrepareExec(ctx context.Context, nameOrID string, spec ExecSpec) (PreparedExec, error) {
	ref := ExecRef(nameOrID, spec.Cmd)
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return nil, NewError("exec", ref, ErrInvalid, errors.New("need a container and a command"))
	}
	// Note: the connection outlives ctx once attached (the hijack detaches it).
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	fail := func(err error) (PreparedExec, error) { return nil, expired(wrap("exec", ref, err), "exec", ref) }
	if err := d.refuseBusy(ctx, nameOrID, ref); err != nil {
		return fail(err)
	}
	cmd := append([]string{"sh", "-c", holdScript, "sh"}, spec.Cmd...)
	if spec.HoldsItself {
		cmd = spec.Cmd
	}
	created, err := d.cli.ExecCreate(ctx, nameOrID, client.ExecCreateOptions{
		Cmd:          cmd,
		Env:          envList(spec.Env),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return fail(err)
	}
	st, err := d.attachExec(ctx, created.ID, cmp.Or(spec.OutputLimit, DefaultOutputLimit))
	if err != nil {
		return fail(err)
	}
	return &preparedExec{d: d, nameOrID: nameOrID, ref: ref, program: spec.Cmd[0], id: created.ID,
		timeout: cmp.Or(spec.Timeout, DefaultExecTimeout), st: st}, nil
}

type preparedExec struct {
	d                      *Docker
	nameOrID, ref, program string
	id                     string
	timeout                time.Duration
	st                     *execStream
	mu                     sync.Mutex
	used                   bool
}

// take marks the exec used; false if it was already.
func (p *preparedExec) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	used := p.used
	p.used = true
	return !used
}

// Run: see PreparedExec.
func (p *preparedExec) Run(ctx context.Context, env map[string]string) (ExecResult, error) {
	ectx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.give(ctx, ectx, env); err != nil {
		return ExecResult{}, err
	}
	res, err := p.d.waitExec(ectx, p.id, p.st)
	p.st.att.Close()
	if err == nil {
		return res, nil
	}
	timedOut := ctx.Err() == nil && ectx.Err() == context.DeadlineExceeded
	why := "timed out after " + FormatDuration(p.timeout)
	if !timedOut {
		why = "was abandoned (" + errText(err) + ")"
	}
	p.d.leave(p.nameOrID, leftExec{id: p.id, program: p.program, why: why})
	if timedOut {
		return ExecResult{}, TimeoutError("exec", p.ref, p.timeout)
	}
	return ExecResult{}, wrap("exec", p.ref, err)
}

// give hands the held shell env, once: the command runs.
func (p *preparedExec) give(ctx, ectx context.Context, env map[string]string) error {
	if !p.take() {
		return NewError("exec", p.ref, ErrInvalid, errors.New("a prepared exec runs once"))
	}
	input, err := heldEnv(env)
	if err != nil {
		err = NewError("exec", p.ref, ErrInvalid, err)
	} else {
		err = ctx.Err()
	}
	if err == nil {
		err = p.d.refuseBusy(ctx, p.nameOrID, p.ref)
	}
	if err == nil && p.ended() {
		err = NewError("exec", p.ref, ErrNotRun, errors.New("its held shell is gone (the connection broke or the container stopped)"))
	}
	if err != nil {
		p.st.att.Close()
		return wrap("exec", p.ref, err)
	}
	if dl, ok := ectx.Deadline(); ok {
		_ = p.st.att.Conn.SetWriteDeadline(dl)
	}
	if _, err = p.st.att.Conn.Write(input); err != nil {
		p.st.att.Close()
		return NewError("exec", p.ref, ErrNotRun, err)
	}
	return nil
}

// Launch: see PreparedExec. A command still running at wait keeps its
// connection, drained, until it ends (a closed one might not be drained).
func (p *preparedExec) Launch(ctx context.Context, env map[string]string, wait time.Duration, late func(ExecResult)) (ExecResult, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, p.timeout) // bounds the write
	defer cancel()
	if err := p.give(ctx, wctx, env); err != nil {
		return ExecResult{}, false, err
	}
	t := time.NewTimer(max(0, wait))
	defer t.Stop()
	select {
	case err := <-p.st.copied:
		p.st.copied <- err
	case <-t.C:
		go p.drain(late)
		return ExecResult{}, false, nil
	case <-ctx.Done(): // the caller is gone; the command runs on all the same
		go p.drain(late)
		return ExecResult{}, false, nil
	}
	res, err := p.d.waitExec(ctx, p.id, p.st)
	p.st.att.Close()
	if err != nil {
		return ExecResult{}, true, wrap("exec", p.ref, err)
	}
	return res, true, nil
}

// drain reads a launched command's output until it ends, hands its result
// to late (when there is one, and the end and exit code could be read), then
// lets its connection go.
func (p *preparedExec) drain(late func(ExecResult)) {
	defer p.st.att.Close()
	err := <-p.st.copied
	if late == nil || err != nil && !errors.Is(err, io.EOF) {
		return
	}
	p.st.copied <- err // waitExec reads it again
	ctx, cancel := context.WithTimeout(p.d.base, p.d.opts.callTimeout)
	defer cancel()
	if res, err := p.d.waitExec(ctx, p.id, p.st); err == nil {
		late(res)
	}
}

// ended says the held shell's output stream has ended: it is gone. The copy's
// result is put back for waitExec.
func (p *preparedExec) ended() bool {
	select {
	case err := <-p.st.copied:
		p.st.copied <- err
		return true
	default:
		return false
	}
}

// Held: see PreparedExec.
func (p *preparedExec) Held() bool {
	p.mu.Lock()
	used := p.used
	p.mu.Unlock()
	return !used && !p.ended()
}

// Close: see PreparedExec. Closing the connection closes the shell's stdin.
func (p *preparedExec) Close() {
	if p.take() {
		p.st.att.Close()
	}
}

// heldEnv encodes env for holdScript: a line `export NAME='value'` each, every
// newline in a value written as '"$_held_nl"' so that no value spans lines, then ".".
func heldEnv(env map[string]string) ([]byte, error) {
	if err := CheckHeldEnv(env); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := strings.ReplaceAll(env[k], "'", `'\''`)
		v = strings.ReplaceAll(v, "\n", `'"$_held_nl"'`)
		fmt.Fprintf(&b, "export %s='%s'\n", k, v)
	}
	b.WriteString(".\n")
	return []byte(b.String()), nil
}
