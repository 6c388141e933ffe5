package drivertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of Exec: results, limits, timeouts, and no second exec beside one
// that timed out.

func (c contract) exec(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec", Script{Sleep: Forever})
	s.Env = map[string]string{"SANDBOX_FOO": "bar"}
	mustCreate(t, ctx, d, s)

	for _, tc := range []struct {
		name  string
		spec  dd.ExecSpec
		check func(t *testing.T, r dd.ExecResult)
	}{
		{"exit code and streams", dd.ExecSpec{Cmd: env.Command(Script{Stdout: []string{"out"}, Stderr: []string{"err"}, Exit: 7})},
			func(t *testing.T, r dd.ExecResult) {
				if r.ExitCode != 7 || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Truncated {
					t.Errorf("got %+v, want exit 7, out, err, not truncated", r)
				}
			}},
		{"own env and container env", dd.ExecSpec{
			Cmd: env.Command(Script{EchoEnv: []string{"SANDBOX_SECRET", "SANDBOX_FOO"}}),
			Env: map[string]string{"SANDBOX_SECRET": "s3cret"}},
			func(t *testing.T, r dd.ExecResult) {
				if r.ExitCode != 0 || r.Stdout != "s3cret\nbar\n" {
					t.Errorf("got %+v, want the exec's and the container's variables", r)
				}
			}},
		{"output keeps the tail", dd.ExecSpec{Cmd: env.Command(Script{FillStdout: 10000})},
			func(t *testing.T, r dd.ExecResult) {
				if len(r.Stdout) != dd.DefaultOutputLimit || !strings.HasSuffix(r.Stdout, "x\nEND\n") || !r.Truncated {
					t.Errorf("got %d bytes ending %q, truncated %v; want the last %d", len(r.Stdout), tail(r.Stdout), r.Truncated, dd.DefaultOutputLimit)
				}
			}},
		{"output limit", dd.ExecSpec{Cmd: env.Command(Script{FillStdout: 1000}), OutputLimit: 100},
			func(t *testing.T, r dd.ExecResult) {
				if len(r.Stdout) != 100 || !strings.HasSuffix(r.Stdout, "END\n") {
					t.Errorf("got %d bytes ending %q, want 100", len(r.Stdout), tail(r.Stdout))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := d.Exec(ctx, s.Name, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}

	t.Run("not running", func(t *testing.T) {
		s := spec(env, "exec-exited", Script{Exit: 0})
		mustCreate(t, ctx, d, s)
		waitState(t, ctx, d, s.Name, dd.StateExited)
		_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{})})
		wantKind(t, err, dd.ErrConflict)
	})
}

func tail(s string) string { return s[max(0, len(s)-12):] }

func (c contract) execTimeout(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec-timeout", Script{Sleep: Forever})
	mustCreate(t, ctx, d, s)
	cmd := env.Command(Script{Sleep: 20 * time.Second})
	start := time.Now()
	_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: cmd, Timeout: 500 * time.Millisecond})
	wantKind(t, err, dd.ErrTimeout)
	want := fmt.Sprintf("exec %s [%s]: timeout after 500ms: context deadline exceeded", s.Name, cmd[0])
	if err != nil && err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Exec took %v to time out after 500ms", took)
	}
}

// execBusy: Docker cannot stop an exec, so one that timed out keeps running in its
// container. Until it ends, another exec there is refused as busy without being
// started (a probe retried under load must not pile up processes in the
// container); other containers are not affected; once it ends, execs run again.
func (c contract) execBusy(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	busy, other := spec(env, "exec-busy", Script{Sleep: Forever}), spec(env, "exec-other", Script{Sleep: Forever})
	mustCreate(t, ctx, d, busy)
	mustCreate(t, ctx, d, other)
	slow := env.Command(Script{Sleep: 30 * time.Second})
	_, err := d.Exec(ctx, busy.Name, dd.ExecSpec{Cmd: slow, Timeout: time.Second})
	wantKind(t, err, dd.ErrTimeout)

	_, err = d.Exec(ctx, busy.Name, dd.ExecSpec{Cmd: slow, Timeout: time.Second})
	wantKind(t, err, dd.ErrBusy)
	want := fmt.Sprintf("exec %s [%s]: container %s is busy: an earlier exec of %s timed out after 1s and is still running in it; not starting another until it ends",
		busy.Name, slow[0], busy.Name, slow[0])
	if err != nil && err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if errors.Is(err, dd.ErrTimeout) {
		t.Errorf("busy error %q is also a timeout: it did not wait", err)
	}
	if n := env.ExecsRunning(t, busy.Name, slow); n != 1 {
		t.Errorf("%d execs of %q run in %s, want the one that timed out", n, slow, busy.Name)
	}
	quick := env.Command(Script{Stdout: []string{"ok"}})
	if r, err := d.Exec(ctx, other.Name, dd.ExecSpec{Cmd: quick}); err != nil || r.Stdout != "ok\n" {
		t.Errorf("Exec in another container = %+v, %v; want ok", r, err)
	}

	t.Run("until the earlier exec ends", func(t *testing.T) {
		short := env.Command(Script{Sleep: 5 * time.Second})
		_, err := d.Exec(ctx, other.Name, dd.ExecSpec{Cmd: short, Timeout: time.Second})
		wantKind(t, err, dd.ErrTimeout)
		_, err = d.Exec(ctx, other.Name, dd.ExecSpec{Cmd: quick})
		wantKind(t, err, dd.ErrBusy)
		var r dd.ExecResult
		eventually(t, 30*time.Second, "Exec running again", func() (bool, string) {
			r, err = d.Exec(ctx, other.Name, dd.ExecSpec{Cmd: quick})
			return !errors.Is(err, dd.ErrBusy), fmt.Sprint(err)
		})
		if err != nil || r.ExitCode != 0 || r.Stdout != "ok\n" {
			t.Errorf("Exec after the earlier one ended = %+v, %v; want ok", r, err)
		}
	})
}

// execKilled: an exec to be killed at its timeout (KillAtTimeout) that hangs
// does not outlive it in its container: soon after its caller stops waiting,
// the next exec there runs rather than being refused as busy until the hung
// one ends by itself (a probe stuck on a half-open connection held a mongo
// service unready for minutes that way).
func (c contract) execKilled(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec-killed", Script{Sleep: Forever})
	mustCreate(t, ctx, d, s)
	hung := env.Command(Script{Sleep: 10 * time.Minute})
	_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: hung, Timeout: time.Second, KillAtTimeout: true})
	wantKind(t, err, dd.ErrTimeout)
	quick := env.Command(Script{Stdout: []string{"ok"}})
	var r dd.ExecResult
	eventually(t, 30*time.Second, "the next exec running", func() (bool, string) {
		r, err = d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: quick})
		return !errors.Is(err, dd.ErrBusy), fmt.Sprint(err)
	})
	if err != nil || r.Stdout != "ok\n" {
		t.Errorf("Exec after the killed one = %+v, %v; want ok", r, err)
	}
	if n := env.ExecsRunning(t, s.Name, hung); n != 0 {
		t.Errorf("%d execs of %q still run in %s, want none: it was to be killed", n, hung, s.Name)
	}
}

// preparedExec: a command started ahead runs only when it gets the rest of its
// environment, which arrives byte for byte; its timeout counts from Run; while
// held it does not make its container busy; abandoned, it never runs.
func (c contract) preparedExec(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec-prepared", Script{Sleep: Forever})
	s.Env = map[string]string{"SANDBOX_FOO": "bar"}
	mustCreate(t, ctx, d, s)
	echo := env.Command(Script{EchoEnv: []string{"SANDBOX_SECRET", "SANDBOX_PLAIN", "SANDBOX_FOO"}})
	awkward := "it's \"x\" $(id) `id` \\ \n second line ü"

	p, err := d.PrepareExec(ctx, s.Name, dd.ExecSpec{Cmd: echo, Env: map[string]string{"SANDBOX_PLAIN": "p"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	quick := env.Command(Script{Stdout: []string{"ok"}})
	if r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: quick}); err != nil || r.Stdout != "ok\n" {
		t.Errorf("Exec beside a held exec = %+v, %v; want ok", r, err)
	}
	time.Sleep(1500 * time.Millisecond) // held longer than its timeout
	r, err := p.Run(ctx, map[string]string{"SANDBOX_SECRET": awkward})
	if want := awkward + "\np\nbar\n"; err != nil || r.ExitCode != 0 || r.Stdout != want {
		t.Errorf("Run = %+v, %v; want exit 0 and %q", r, err, want)
	}
	_, err = p.Run(ctx, nil)
	wantKind(t, err, dd.ErrInvalid)
	p.Close()

	t.Run("abandoned", func(t *testing.T) { preparedAbandoned(t, ctx, d, s.Name, quick) })
	t.Run("holding itself", func(t *testing.T) { preparedHoldsItself(t, ctx, d, env, s.Name, awkward) })
	t.Run("its container gone", func(t *testing.T) { preparedContainerGone(t, ctx, d, env, quick) })

	t.Run("bad variable name", func(t *testing.T) {
		p, err := d.PrepareExec(ctx, s.Name, dd.ExecSpec{Cmd: quick})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		_, err = p.Run(ctx, map[string]string{"1X": "y"})
		wantKind(t, err, dd.ErrInvalid)
	})
	t.Run("timeout from Run, then busy", func(t *testing.T) { preparedTimeout(t, ctx, d, env, s.Name, quick) })
}

// preparedHoldsItself: a command that reads its environment itself
// (HoldsItself) gets Run's, an awkward value whole, and answers as any; one
// closed before Run leaves its container free.
func preparedHoldsItself(t *testing.T, ctx context.Context, d dd.Driver, env Env, name, awkward string) {
	spec := dd.ExecSpec{Cmd: env.Command(Script{HoldsItself: true, EchoEnv: []string{"SANDBOX_SECRET"}, Exit: 4}), HoldsItself: true}
	p, err := d.PrepareExec(ctx, name, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := p.Run(ctx, map[string]string{"SANDBOX_SECRET": awkward}); err != nil || r.ExitCode != 4 || r.Stdout != awkward+"\n" {
		t.Errorf("Run of a command holding itself = %+v, %v; want exit 4 and %q", r, err, awkward+"\n")
	}
	q, err := d.PrepareExec(ctx, name, spec)
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	quick := env.Command(Script{Stdout: []string{"ok"}})
	if r, err := d.Exec(ctx, name, dd.ExecSpec{Cmd: quick}); err != nil || r.Stdout != "ok\n" {
		t.Errorf("Exec after one holding itself was closed = %+v, %v; want ok", r, err)
	}
}

// preparedAbandoned: a prepared exec closed never runs, and leaves its container free.
func preparedAbandoned(t *testing.T, ctx context.Context, d dd.Driver, name string, quick []string) {
	p, err := d.PrepareExec(ctx, name, dd.ExecSpec{Cmd: quick})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, err = p.Run(ctx, nil)
	wantKind(t, err, dd.ErrInvalid)
	if r, err := d.Exec(ctx, name, dd.ExecSpec{Cmd: quick}); err != nil || r.Stdout != "ok\n" {
		t.Errorf("Exec after Close = %+v, %v; want ok", r, err)
	}
}

// preparedContainerGone: a prepared exec whose container is removed is held no
// more, and does not run.
func preparedContainerGone(t *testing.T, ctx context.Context, d dd.Driver, env Env, quick []string) {
	gone := spec(env, "exec-prepared-gone", Script{Sleep: Forever})
	mustCreate(t, ctx, d, gone)
	p, err := d.PrepareExec(ctx, gone.Name, dd.ExecSpec{Cmd: quick})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Held() {
		t.Error("a prepared exec not run is not held")
	}
	if err := d.Remove(ctx, gone.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the exec no longer held", func() (bool, string) { return !p.Held(), "held" })
	_, err = p.Run(ctx, nil)
	wantKind(t, err, dd.ErrNotRun)
}

// preparedTimeout: a prepared exec that outlives its timeout fails with
// ErrTimeout, and the command it left running keeps its container busy.
func preparedTimeout(t *testing.T, ctx context.Context, d dd.Driver, env Env, name string, quick []string) {
	slow := env.Command(Script{Sleep: 20 * time.Second})
	p, err := d.PrepareExec(ctx, name, dd.ExecSpec{Cmd: slow, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(ctx, nil)
	wantKind(t, err, dd.ErrTimeout)
	_, err = d.Exec(ctx, name, dd.ExecSpec{Cmd: quick})
	wantKind(t, err, dd.ErrBusy)
	_, err = d.PrepareExec(ctx, name, dd.ExecSpec{Cmd: quick})
	wantKind(t, err, dd.ErrBusy)
}
