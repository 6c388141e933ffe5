package dockerdriver

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// Exec runs spec.Cmd in the container and waits for it, at most spec.Timeout.
// Docker cannot stop an exec: one that timed out keeps running, and until it
// ends another exec into that container is refused at once as busy (ErrBusy),
// so that a slow probe retried under load cannot pile up in the container.
func (d *Docker) Exec(ctx context.Context, nameOrID string, spec ExecSpec) (ExecResult, error) {
	ref := ExecRef(nameOrID, spec.Cmd)
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return ExecResult{}, NewError("exec", ref, ErrInvalid, errors.New("need a container and a command"))
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	limit := spec.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := func() bool { return ctx.Err() == nil && ectx.Err() == context.DeadlineExceeded }
	fail := func(err error) (ExecResult, error) {
		if timedOut() {
			return ExecResult{}, TimeoutError("exec", ref, timeout)
		}
		return ExecResult{}, wrap("exec", ref, err)
	}

	if err := d.refuseBusy(ectx, nameOrID, ref); err != nil {
		return fail(err)
	}
	created, err := d.cli.ExecCreate(ectx, nameOrID, client.ExecCreateOptions{
		Cmd:          killedAt(spec, timeout),
		Env:          envList(spec.Env),
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return fail(err)
	}
	res, err := d.runExec(ectx, created.ID, limit)
	if err != nil {
		// It may run on: remember it, whatever stopped the wait.
		why := "timed out after " + FormatDuration(timeout)
		if !timedOut() {
			why = "was abandoned (" + errText(err) + ")"
		}
		d.leave(nameOrID, leftExec{id: created.ID, program: spec.Cmd[0], why: why})
		return fail(err)
	}
	return res, nil
}

// killedAt is spec's command, under timeout(1) when it is to be killed at
// timeout: a second after it, in whole seconds (busybox's timeout takes no
// fractions), so that the caller sees a timeout, not an exit of 137.
func killedAt(spec ExecSpec, timeout time.Duration) []string {
	if !spec.KillAtTimeout {
		return spec.Cmd
	}
	secs := strconv.FormatInt(int64((timeout+time.Second-1)/time.Second)+1, 10)
	return append([]string{"timeout", "-s", "KILL", secs}, spec.Cmd...)
}

// runExec starts exec id and waits for it to end, collecting its output.
func (d *Docker) runExec(ctx context.Context, id string, limit int) (ExecResult, error) {
	st, err := d.attachExec(ctx, id, limit)
	if err != nil {
		return ExecResult{}, err
	}
	defer st.att.Close()
	return d.waitExec(ctx, id, st)
}

// execStream is a started exec's connection and the output collected from it.
type execStream struct {
	att            client.HijackedResponse
	stdout, stderr *tailBuffer
	copied         chan error
}

// attachExec starts exec id and collects its output in the background.
func (d *Docker) attachExec(ctx context.Context, id string, limit int) (*execStream, error) {
	att, err := d.cli.ExecAttach(ctx, id, client.ExecAttachOptions{})
	if err != nil {
		return nil, err
	}
	st := &execStream{att: att.HijackedResponse, stdout: newTailBuffer(limit), stderr: newTailBuffer(limit), copied: make(chan error, 1)}
	go func() {
		_, err := stdcopy.StdCopy(st.stdout, st.stderr, att.Reader)
		st.copied <- err
	}()
	return st, nil
}

// waitExec waits for a started exec to end and reads its exit code.
func (d *Docker) waitExec(ctx context.Context, id string, st *execStream) (ExecResult, error) {
	var err error
	select {
	case err = <-st.copied:
	case <-ctx.Done():
		// The hijacked connection ignores ctx once established: close it
		// to unblock the copy, and wait so the buffers are ours again.
		st.att.Close()
		<-st.copied //nolint:errcheck // the copy fails because we closed its connection; ctx's error is the one to report
		return ExecResult{}, ctx.Err()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return ExecResult{}, err
	}

	// The stream ends when the process does, but the daemon may not have
	// recorded the exit code yet: poll briefly.
	for {
		ins, err := d.cli.ExecInspect(ctx, id, client.ExecInspectOptions{})
		if err != nil {
			return ExecResult{}, err
		}
		if !ins.Running {
			return ExecResult{
				ExitCode:  ins.ExitCode,
				Stdout:    st.stdout.String(),
				Stderr:    st.stderr.String(),
				Truncated: st.stdout.truncated || st.stderr.truncated,
			}, nil
		}
		select {
		case <-ctx.Done():
			return ExecResult{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ExecRef names an exec in errors by container and program, never by its
// arguments, which may hold secrets.
func ExecRef(nameOrID string, cmd []string) string {
	if len(cmd) == 0 {
		return nameOrID
	}
	return nameOrID + " [" + cmd[0] + "]"
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.limit {
		b.truncated = b.truncated || len(p) > b.limit || len(b.buf) > 0
		b.buf = append(b.buf[:0], p[len(p)-b.limit:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.limit; over > 0 {
		b.truncated = true
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
