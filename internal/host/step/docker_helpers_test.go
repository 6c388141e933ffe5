package step_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// These tests run on the real Docker engine and the local engine images
// (make images), as test/integration's do; SANDBOX_SKIP_DOCKER=1 skips them.

// testLabel marks what the tests create, so that cleanup finds it.
const testLabel = "sandbox.roboco.io/test"

// within bounds every wait: generous, for a loaded machine; a container's
// start more so (postgres' init runs a server, stops it and starts it again).
const (
	within      = 60 * time.Second
	startWithin = 4 * time.Minute
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// postgresContainer starts the local postgres image as the controller makes
// it (its postmaster PID 1, every capability dropped but the engine's few),
// waits for the real server, and removes it when the test ends.
func postgresContainer(t *testing.T) (dd.Driver, dd.Container) {
	t.Helper()
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1")
	}
	img, err := testenv.EngineImages()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dd.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	e, _ := engine.Lookup("postgres")
	made := e.Container(randomHex(8), nil)
	var files []dd.File
	for path, content := range made.Secrets {
		files = append(files, dd.File{Path: path, Mode: 0o444, Content: []byte(content)})
	}
	run := randomHex(4)
	c, err := d.CreateContainer(context.Background(), dd.ContainerSpec{
		Name: "sbx-step-" + run, Image: img.Plain["postgres"], OwnerLabel: "sandbox.roboco.io/uid",
		Labels: map[string]string{testLabel: "step-" + run, "sandbox.roboco.io/uid": "step-" + run},
		Env:    made.Env, Tmpfs: made.Tmpfs, Files: files, CapAdd: made.CapAdd, MemoryBytes: 512 << 20, PidsLimit: 512,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Remove(context.Background(), c.ID, 5*time.Second); err != nil {
			t.Errorf("removing %s: %v", c.Name, err)
		}
	})
	// The image's init runs a temporary server on the unix socket only: TCP
	// answers once the real postmaster runs.
	testenv.WaitFor(t, startWithin, 200*time.Millisecond, "postgres to answer over TCP", func() bool {
		r, err := d.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: []string{"pg_isready", "-q", "-h", "127.0.0.1"}})
		return err == nil && r.ExitCode == 0
	})
	return d, c
}

// eachRunner runs test on both runners, each in a postgres container of its
// own: the perl one (the engine images have perl) and the sh one, for images
// without perl (the container's perl hidden).
func eachRunner(t *testing.T, test func(t *testing.T, d dd.Driver, c dd.Container)) {
	t.Run("perl", func(t *testing.T) {
		d, c := postgresContainer(t)
		test(t, d, c)
	})
	t.Run("sh", func(t *testing.T) {
		d, c := postgresContainer(t)
		sh(t, d, c, "mv \"$(command -v perl)\" /usr/bin/perl-hidden && ! command -v perl")
		test(t, d, c)
	})
}

// sh runs script in c and returns its stdout (its whole stdout: the process
// list holds runners' long command lines, and a tail would drop processes).
func sh(t *testing.T, d dd.Driver, c dd.Container, script string) string {
	t.Helper()
	r, err := d.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: []string{"sh", "-c", script}, OutputLimit: 1 << 20})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("sh -c %q: %+v, %v", script, r, err)
	}
	return r.Stdout
}

// processes lists "pid ppid command" of every process in c, by /proc (the
// engine images have no ps).
func processes(t *testing.T, d dd.Driver, c dd.Container) []string {
	t.Helper()
	out := sh(t, d, c, `for p in /proc/[0-9]*; do
	pp=$(sed -n 's/^PPid:[[:space:]]*//p' "$p/status" 2>/dev/null) || continue
	printf '%s %s %s\n' "${p#/proc/}" "$pp" "$(tr '\0\n' '  ' < "$p/cmdline" 2>/dev/null)"
done`)
	return strings.Split(strings.TrimSpace(out), "\n")
}

// running counts c's processes whose command line contains s.
func running(t *testing.T, d dd.Driver, c dd.Container, s string) int {
	t.Helper()
	n := 0
	for _, p := range processes(t, d, c) {
		if strings.Contains(p, s) && !strings.Contains(p, "/proc/") {
			n++
		}
	}
	return n
}

// postmasterChildren are the pids of the postmaster's lasting children
// (checkpointer, background writer, walwriter; autovacuum's workers come and
// go): one that took a child's death for a crash has made them anew.
func postmasterChildren(t *testing.T, d dd.Driver, c dd.Container) []string {
	t.Helper()
	var out []string
	for _, p := range processes(t, d, c) {
		f := strings.Fields(p)
		if len(f) > 3 && f[1] == "1" && f[2] == "postgres:" && slices.Contains([]string{"checkpointer", "background", "walwriter"}, f[3]) {
			out = append(out, f[0])
		}
	}
	slices.Sort(out)
	return out
}
