package dockerdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// holdScript holds the command in "$@" until its environment arrives on stdin
// (heldEnv's lines, then a line "."), then runs it in place of the shell, its
// stdin /dev/null. When stdin closes first (Close), the command never runs.
// Note: Run does not half-close stdin; proxies in front of a daemon may take that
// for the end of the whole connection.
const holdScript = `nl='
'
s=
while IFS= read -r l; do
	if [ "$l" = . ]; then
		eval "$s"
		exec "$@" </dev/null
	fi
	s="$s$l$nl"
done
echo "` + heldNotRun + `" >&2
exit 125`

// heldNotRun is what holdScript says when its stdin closes before the
// environment arrived (the connection broke): the command did not run.
const heldNotRun = "held exec: stdin closed before the environment arrived; not run"

// PrepareExec: see Driver. The exec is created and started at once (what costs
// an exec start), as a shell that reads the environment from stdin.
func (d *Docker) PrepareExec(ctx context.Context, nameOrID string, spec ExecSpec) (PreparedExec, error) {
	ref := ExecRef(nameOrID, spec.Cmd)
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return nil, NewError("exec", ref, ErrInvalid, errors.New("need a container and a command"))
	}
	if err := d.refuseBusy(ctx, nameOrID, ref); err != nil {
		return nil, wrap("exec", ref, err)
	}
	created, err := d.cli.ExecCreate(ctx, nameOrID, client.ExecCreateOptions{
		Cmd:          append([]string{"sh", "-c", holdScript, "sh"}, spec.Cmd...),
		Env:          envList(spec.Env),
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, wrap("exec", ref, err)
	}
	st, err := d.attachExec(ctx, created.ID, cmp.Or(spec.OutputLimit, DefaultOutputLimit))
	if err != nil {
		return nil, wrap("exec", ref, err)
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
	if !p.take() {
		return ExecResult{}, NewError("exec", p.ref, ErrInvalid, errors.New("a prepared exec runs once"))
	}
	input, err := heldEnv(env)
	if err != nil {
		p.st.att.Close()
		return ExecResult{}, NewError("exec", p.ref, ErrInvalid, err)
	}
	ectx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if dl, ok := ectx.Deadline(); ok {
		_ = p.st.att.Conn.SetWriteDeadline(dl)
	}
	if _, err = p.st.att.Conn.Write(input); err != nil {
		// Note: the held shell is gone (its container stopped, the connection broke).
		p.st.att.Close()
		return ExecResult{}, wrap("exec", p.ref, err)
	}
	res, err := p.d.waitExec(ectx, p.id, p.st)
	p.st.att.Close()
	switch {
	case err == nil && res.ExitCode == 125 && strings.Contains(res.Stderr, heldNotRun):
		return ExecResult{}, NewError("exec", p.ref, ErrConflict, errors.New("the prepared command never ran: its connection to the daemon broke while it was held"))
	case err == nil:
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

// Close: see PreparedExec. Closing the connection closes the shell's stdin.
func (p *preparedExec) Close() {
	if p.take() {
		p.st.att.Close()
	}
}

// heldEnv encodes env for holdScript: a line `export NAME='value'` each, every
// newline in a value written as '"$nl"' so that no value spans lines, then ".".
func heldEnv(env map[string]string) ([]byte, error) {
	if err := CheckHeldEnv(env); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := strings.ReplaceAll(env[k], "'", `'\''`)
		v = strings.ReplaceAll(v, "\n", `'"$nl"'`)
		fmt.Fprintf(&b, "export %s='%s'\n", k, v)
	}
	b.WriteString(".\n")
	return []byte(b.String()), nil
}
