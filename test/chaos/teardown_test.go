package chaos

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestChaosDaemonTeardown: a daemon that did not stop its containers (killed
// after its stop timeout, as the host-swap's other host once was) leaves their
// shims and processes running; the suite's teardown removes them all the same.
func TestChaosDaemonTeardown(t *testing.T) {
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1")
	}
	if os.Geteuid() != 0 {
		t.Skip("the chaos suite runs a dockerd of its own: it needs root")
	}
	images, err := testenv.EngineImages()
	if err != nil {
		t.Fatal(err)
	}
	removeStale()
	d := newDaemon("t"+strconv.Itoa(os.Getpid()%100000), t.TempDir())
	t.Cleanup(d.Teardown)
	if err := d.CreateBridge(); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(d.altRoot); err != nil {
		t.Fatal(err)
	}
	if err := d.LoadImages([]string{images.Plain["redis"]}); err != nil {
		t.Fatal(err)
	}
	id, err := d.Docker(t.Context(), "run", "-d", "--label", "sandbox.roboco.io/test=1", images.Plain["redis"])
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Docker(t.Context(), "inspect", "-f", "{{.State.Pid}}", strings.TrimSpace(id))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	// The daemon goes without stopping its container, as after its stop timeout.
	d.Kill()
	if len(testenv.Shims(d.ExecRootFor(d.altRoot))) == 0 || !testenv.Alive(pid) {
		t.Fatal("the container did not outlive its daemon: the test reproduces nothing")
	}
	if err := d.Start(d.DataRoot); err != nil {
		t.Fatal(err)
	}
	d.Teardown()
	if left := testenv.Shims(d.ExecRootFor(d.altRoot)); len(left) > 0 {
		t.Errorf("containerd shims of the other host still run: %v", left)
	}
	if testenv.Alive(pid) {
		t.Errorf("the other host's container process %d still runs", pid)
	}
	if m := testenv.MountsUnder(d.ExecRoot); len(m) > 0 {
		t.Errorf("mounts left under %s: %v", d.ExecRoot, m)
	}
}
