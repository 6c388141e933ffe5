package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// awkward ends the new passwords: what breaks naive quoting in sh, SQL and URIs.
const awkward = "-it's \"q\" $HOME `id` \\ %s @:/?"

// TestEngineRotate hands a warm-pool member made with password A to a Sandbox with
// password B in one exec, on every engine's image (and the kitchen images, with a
// feature active): afterwards the probe passes with B and fails with A, the secret
// files hold B's content and nothing of A (a restart, which starts from them, gives
// B), no password reached the container's log, and a repeat (after a crash) passes
// too. The new password is not hex, as every caller's might not be.
func TestEngineRotate(t *testing.T) {
	h := newHost(t)
	img := images(t)
	network := h.network(t)
	cases := []struct {
		name, engine, image string
		features            []string
	}{
		{"postgres", "postgres", img.Plain["postgres"], nil},
		{"redis", "redis", img.Plain["redis"], nil},
		{"mongo", "mongo", img.Plain["mongo"], nil},
		{"postgres-kitchen", "postgres", img.KitchenSink["postgres"], []string{"vector"}},
		{"redis-kitchen", "redis", img.KitchenSink["redis"], []string{"search"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := engine.Lookup(tc.engine)
			a, b := newPassword(t), newPassword(t)+awkward
			c := h.runEngine(t, e, tc.image, network, a, tc.features, nil)
			h.readyWith(t, e, c, network, a)
			addr := c.Networks[network].IPAddress
			steps, err := e.ActivateFeatures(a, addr, tc.features)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range steps {
				h.mustPass(t, c.ID, s, "activating features with A")
			}

			for _, run := range []string{"rotation", "repeated rotation (after a crash)"} {
				took := h.mustRotate(t, c.ID, e, a, b, addr, run)
				t.Logf("%s: %s took %s", tc.name, run, took.Round(time.Millisecond))
				h.readyWith(t, e, c, network, b)
				h.mustRefuse(t, c.ID, e.Probe(a, addr), "the probe with A after the "+run)
			}
			for path, want := range e.Container(b, tc.features).Secrets {
				res, _, _ := h.run(t, c.ID, engine.Step{Argv: []string{"cat", path}, Timeout: 10 * time.Second})
				if res.Stdout != want || strings.Contains(res.Stdout, a) {
					t.Errorf("%s: %d bytes, not what a container made with B has (or A is still there)", path, len(res.Stdout))
				}
			}
			logs, err := h.driver.LogsTail(context.Background(), c.ID, 500)
			if err != nil || strings.Contains(logs, a) || strings.Contains(logs, b) {
				t.Errorf("the container's log holds a password (or is unreadable: %v)", err)
			}
			if len(tc.features) > 0 {
				verify, parse := e.VerifyFeatures(b, addr)
				res, _, _ := h.run(t, c.ID, verify)
				if missing := engine.Missing(tc.features, parse(res.Stdout)); len(missing) > 0 {
					t.Errorf("features %v no longer listed with B: %q", missing, res.Stdout)
				}
			}
			if tc.features == nil { // the kitchen images share the plain ones' entrypoints
				h.restartWith(t, e, c, network, a, b)
			}
		})
	}
}

// restartWith restarts c, whose tmpfs data is then gone: the entrypoint sets the
// service up again from the secret files alone, which must give it password b, not a.
func (h *host) restartWith(t *testing.T, e engine.Engine, c dd.Container, network, a, b string) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.cli.ContainerRestart(ctx, c.ID, client.ContainerRestartOptions{}); err != nil {
		t.Fatalf("restarting: %v", err)
	}
	c, err := h.driver.Inspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.readyWith(t, e, c, network, b)
	h.mustRefuse(t, c.ID, e.Probe(a, c.Networks[network].IPAddress), "the probe with A after a restart")
}

// TestBenchRotate measures what a claim for a Sandbox whose Secret exists (its
// member rotated) waits for per engine on the real engine: a Rotate step's exec
// start and run, the median of several rotations of one container, each to a
// fresh password.
func TestBenchRotate(t *testing.T) {
	testenv.BenchOnly(t)
	const rounds = 7
	h := newHost(t)
	plain := images(t).Plain
	network := h.network(t)
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			pw := newPassword(t)
			c := h.runEngine(t, e, plain[e.Name()], network, pw, nil, nil)
			h.readyWith(t, e, c, network, pw)
			addr := c.Networks[network].IPAddress
			var took []time.Duration
			for range rounds {
				next := newPassword(t)
				took = append(took, h.mustRotate(t, c.ID, e, pw, next, addr, "rotation"))
				pw = next
			}
			t.Logf("%s: one Rotate (exec start and run), median of %d: %s (all: %v)", e.Name(), rounds,
				testenv.Median(took).Round(time.Millisecond), took)
		})
	}
}

// run runs s in container id; passed is s.Passed on what it printed.
func (h *host) run(t *testing.T, id string, s engine.Step) (res dd.ExecResult, passed bool, err error) {
	t.Helper()
	res, err = h.driver.Exec(context.Background(), id, dd.ExecSpec{Cmd: s.Argv, Env: s.Env, Timeout: s.Timeout})
	return res, err == nil && s.Passed(res.ExitCode, res.Stdout), err
}

// mustRotate runs e's Rotate step in container id as a claim does: prepared,
// then run with the passwords on its stdin; it fails the test unless it passed,
// and returns how long both took.
func (h *host) mustRotate(t *testing.T, id string, e engine.Engine, oldPassword, newPassword, addr, what string) time.Duration {
	t.Helper()
	s := e.Rotate(addr)
	start := time.Now()
	p, err := h.driver.PrepareExec(context.Background(), id, dd.ExecSpec{Cmd: s.Argv, Env: s.Env, Timeout: s.Timeout})
	if err != nil {
		t.Fatalf("%s: preparing: %v", what, err)
	}
	res, err := p.Run(context.Background(), engine.RotateEnv(e, oldPassword, newPassword))
	if err != nil || !s.Passed(res.ExitCode, res.Stdout) {
		t.Fatalf("%s did not pass: %v, exit %d, stdout %q, stderr %q", what, err, res.ExitCode, res.Stdout, res.Stderr)
	}
	return time.Since(start)
}

// mustPass runs s in container id, fails the test unless it passed, and returns how long it took.
func (h *host) mustPass(t *testing.T, id string, s engine.Step, what string) time.Duration {
	t.Helper()
	start := time.Now()
	res, passed, err := h.run(t, id, s)
	if !passed {
		t.Fatalf("%s did not pass: %v, exit %d, stdout %q, stderr %q", what, err, res.ExitCode, res.Stdout, res.Stderr)
	}
	return time.Since(start)
}

// readyWith waits until e's probe with password passes in c. Note: the bound lies
// well past the engine's probe deadline: on a loaded host mongo can take longer to
// start, and how fast a service starts is not what these tests are about.
func (h *host) readyWith(t *testing.T, e engine.Engine, c dd.Container, network, password string) {
	t.Helper()
	probe := e.Probe(password, c.Networks[network].IPAddress)
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last probe: %s", last)
		}
	})
	testenv.WaitFor(t, 3*time.Minute, poll, e.Name()+" to pass its probe", func() bool {
		res, passed, err := h.run(t, c.ID, probe)
		last = fmt.Sprintf("%v, exit %d, stdout %q, stderr %q", err, res.ExitCode, res.Stdout, res.Stderr)
		return passed
	})
}

// mustRefuse fails the test unless s runs to its end and fails. Note: a run cut
// short by its timeout (a loaded host) proves nothing, so it is tried again.
func (h *host) mustRefuse(t *testing.T, id string, s engine.Step, what string) {
	t.Helper()
	var res dd.ExecResult
	var passed bool
	var err error
	// Note: as long as readyWith: a loaded host (load 18 once) cut every try short for a minute.
	testenv.WaitFor(t, 3*time.Minute, poll, what+" to run to its end", func() bool {
		res, passed, err = h.run(t, id, s)
		return err == nil
	})
	if passed {
		t.Fatalf("%s passed: stdout %q", what, res.Stdout)
	}
}

func newPassword(t *testing.T) string {
	t.Helper()
	pw, err := engine.NewPassword()
	if err != nil {
		t.Fatal(err)
	}
	return pw
}
