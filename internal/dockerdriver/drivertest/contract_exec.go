package drivertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of Exec: results, limits, timeouts.

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
