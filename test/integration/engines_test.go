package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testclients"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// runEngine starts image with e's registry settings, as the controller does (plus
// extraEnv and extraFiles), and removes it (with its volumes) when the test ends.
func (h *host) runEngine(t *testing.T, e engine.Engine, image, network, password string, features []string, extraEnv map[string]string, extraFiles ...dd.File) dd.Container {
	t.Helper()
	labels := map[string]string{testLabel: runID, "sandbox.roboco.io/uid": "it-" + runID}
	made := e.Container(password, features)
	env := made.Env
	for k, v := range extraEnv {
		if env == nil {
			env = map[string]string{}
		}
		env[k] = v
	}
	files := extraFiles
	for path, content := range made.Secrets {
		files = append(files, dd.File{Path: path, Mode: 0o444, Content: []byte(content)})
	}
	name := fmt.Sprintf("sbx-it-%s-%s-%d", e.Slug(), runID, time.Now().UnixNano()%1e6)
	// Note: made as the controller makes it: the password in a file, every
	// capability dropped but the engine's few.
	c, err := h.driver.CreateContainer(context.Background(), dd.ContainerSpec{
		Name: name, Image: image, Labels: labels, OwnerLabel: "sandbox.roboco.io/uid",
		Env: env, Cmd: made.Cmd, Tmpfs: made.Tmpfs, Files: files, CapAdd: made.CapAdd,
		Log:         dd.LogLimits{MaxSize: "10m", MaxFiles: 2},
		MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 512,
		Network: network, Aliases: []string{name},
	})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := h.driver.LogsTail(context.Background(), c.ID, 30)
			t.Logf("logs of %s:\n%s", name, logs)
		}
		if err := h.driver.Remove(context.Background(), c.ID, 5*time.Second); err != nil {
			t.Errorf("removing %s: %v", name, err)
		}
	})
	return c
}

// probeUntilReady runs e's probe every interval until it passes or the engine's
// deadline ends, and returns when it passed (measured from the container's start).
func (h *host) probeUntilReady(t *testing.T, e engine.Engine, c dd.Container, network, password string, interval time.Duration) time.Duration {
	t.Helper()
	addr := c.Networks[network].IPAddress
	step := e.Probe(password, addr)
	deadline := time.Now().Add(e.ProbeDeadline())
	var last string
	for time.Now().Before(deadline) {
		res, err := h.driver.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: step.Argv, Env: step.Env, Timeout: step.Timeout})
		if err == nil && step.Passed(res.ExitCode, res.Stdout) {
			return time.Since(c.StartedAt)
		}
		last = fmt.Sprintf("exit %d err %v: %s %s", res.ExitCode, err, res.Stdout, res.Stderr)
		time.Sleep(interval)
	}
	t.Fatalf("%s did not answer its probe within %s; last: %s", e.Name(), e.ProbeDeadline(), last)
	return 0
}

// checkedProbe runs e's probe as one run beside the pass is run
// (engine.Step.Checked: its exit code alone says): it passes with the
// password, and not with a wrong one.
func (h *host) checkedProbe(t *testing.T, e engine.Engine, c dd.Container, addr, password string) {
	t.Helper()
	for pw, want := range map[string]bool{password: true, password + "-wrong": false} {
		s := e.Probe(pw, addr).Checked()
		res, err := h.driver.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: s.Argv, Env: s.Env, Timeout: 4 * s.Timeout})
		if err != nil {
			t.Fatalf("%s's checked probe: %v", e.Name(), err)
		}
		if got := res.ExitCode == 0; got != want {
			t.Errorf("%s's checked probe with the right password %v: passed %v (exit %d: %s %s)",
				e.Name(), pw == password, got, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
}

// connect proves the published credentials work with the engine's real client, from
// the host to the container's address, and that a wrong password does not.
func connect(t *testing.T, e engine.Engine, addr, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := testclients.Connect(ctx, e.Name(), addr, e.Publish(addr, password)); err != nil {
		t.Fatalf("%s refused the published credentials: %v", e.Name(), err)
	}
	if err := testclients.Connect(ctx, e.Name(), addr, e.Publish(addr, password+"-wrong")); err == nil {
		t.Fatalf("%s accepted a wrong password", e.Name())
	}
	keys, _ := sandboxv1.KeysOf(sandboxv1.Engine(e.Name()))
	if err := testclients.ConnectURL(ctx, e.Name(), e.Publish(addr, password)[keys.URL]); err != nil {
		t.Fatalf("%s refused its published %s: %v", e.Name(), keys.URL, err)
	}
	if err := testclients.ConnectURL(ctx, e.Name(), e.Publish(addr, password+"-wrong")[keys.URL]); err == nil {
		t.Fatalf("%s accepted a URL with a wrong password", e.Name())
	}
}

// TestEngineImages runs each engine's image through the driver the way the
// controller does, and connects with a real client using the generated password.
func TestEngineImages(t *testing.T) {
	h := newHost(t)
	plain := images(t).Plain
	network := h.network(t)
	volumesBefore := testenv.DanglingVolumes(t)
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			ref := plain[e.Name()]
			h.forgetImage(t, ref)
			start := time.Now()
			if err := h.driver.PullImage(context.Background(), ref, nil); err != nil {
				t.Fatalf("pulling %s from the local registry: %v", ref, err)
			}
			pulled := time.Since(start)
			password, err := engine.NewPassword()
			if err != nil {
				t.Fatal(err)
			}
			created := time.Now()
			c := h.runEngine(t, e, ref, network, password, nil, nil)
			ready := h.probeUntilReady(t, e, c, network, password, 100*time.Millisecond)
			probed := time.Since(created)
			connect(t, e, c.Networks[network].IPAddress, password)
			h.checkedProbe(t, e, c, c.Networks[network].IPAddress, password)
			t.Logf("%s: pull %s; create→first successful probe %s (start→ready %s); create→client connected %s",
				e.Name(), pulled.Round(time.Millisecond), probed.Round(time.Millisecond), ready.Round(time.Millisecond),
				time.Since(created).Round(time.Millisecond))
		})
	}
	t.Cleanup(func() {
		if left := h.leftovers(t, map[string]string{testLabel: runID}); len(left) > 0 {
			t.Errorf("containers left behind: %v", left)
		}
		testenv.NoVolumesLeaked(t, volumesBefore)
	})
}

// TestPostgresProbeIgnoresTheInitServer starts postgres with a widened init phase and
// probes every 50 ms from the first instant: the temporary server answers on the
// socket (a naive probe passes), but our probe must not pass until init is over.
//
// "During init" is judged by time, not by reading the logs before each probe: init
// can end between the log read and the probe, and the real server then answers
// within milliseconds. A probe that returned success before the entrypoint logged
// "init process complete" can only have talked to the temporary server.
func TestPostgresProbeIgnoresTheInitServer(t *testing.T) {
	h := newHost(t)
	plain := images(t).Plain
	network := h.network(t)
	e, _ := engine.Lookup("postgres")
	password, _ := engine.NewPassword()
	c := h.runEngine(t, e, plain["postgres"], network, password, nil, map[string]string{"SANDBOX_TEST_INIT_DELAY": "3"})
	addr := c.Networks[network].IPAddress
	probe := e.Probe(password, addr)
	naive := []string{"pg_isready", "-q"} // the socket, as upstream probed

	var naivePassedAt, passedAt time.Time
	deadline := time.Now().Add(e.ProbeDeadline())
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) {
			t.Fatalf("postgres never answered within %s", e.ProbeDeadline())
		}
		res, err := h.driver.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: probe.Argv, Env: probe.Env, Timeout: probe.Timeout})
		if err == nil && probe.Passed(res.ExitCode, res.Stdout) {
			passedAt = time.Now()
			t.Logf("probe passed after %d attempts, %s after start", attempt, passedAt.Sub(c.StartedAt).Round(time.Millisecond))
			break
		}
		if naivePassedAt.IsZero() {
			if r, err := h.driver.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: naive, Timeout: 5 * time.Second}); err == nil && r.ExitCode == 0 {
				naivePassedAt = time.Now()
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	initDone := initCompletedAt(t, h, c.ID)
	if passedAt.Before(initDone) {
		t.Fatalf("the probe passed at %s, while only the init server ran (init completed at %s)",
			passedAt.UTC().Format(time.StampMilli), initDone.UTC().Format(time.StampMilli))
	}
	if naivePassedAt.IsZero() || !naivePassedAt.Before(initDone) {
		t.Fatal("the socket probe never passed during init: the trap was not reproduced")
	}
	t.Logf("the socket probe passed %s before init completed; ours %s after",
		initDone.Sub(naivePassedAt).Round(time.Millisecond), passedAt.Sub(initDone).Round(time.Millisecond))
	connect(t, e, addr, password)
}

// initCompletedAt waits for the entrypoint's "init process complete" line and
// returns the time it stamped on it (the container shares the host's clock).
func initCompletedAt(t *testing.T, h *host, id string) time.Time {
	t.Helper()
	var at time.Time
	testenv.WaitFor(t, 30*time.Second, poll, "the entrypoint to log that init completed", func() bool {
		logs, err := h.driver.LogsTail(context.Background(), id, 200)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(logs, "\n") {
			if !strings.Contains(line, "[entrypoint] PostgreSQL init process complete") {
				continue
			}
			stamp, _, _ := strings.Cut(line, " ")
			if at, err = time.Parse("2006-01-02T15:04:05.000Z", stamp); err != nil {
				t.Fatalf("unreadable entrypoint timestamp in %q: %v", line, err)
			}
			return true
		}
		return false
	})
	return at
}
