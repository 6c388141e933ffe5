package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// manager is one running manager process.
type manager struct {
	cmd    *exec.Cmd
	log    string
	health string
	// exited is closed once the process has ended (one goroutine waits for it).
	exited chan struct{}
}

// startManager runs bin/manager against the test API server, as an operator would.
func startManager(t *testing.T, extra ...string) *manager {
	t.Helper()
	return startBinary(t, filepath.Join(binDir, "manager"), nil, extra...)
}

// startBinary runs the manager binary bin with the variables vars added to the
// environment, and waits until it is ready.
func startBinary(t *testing.T, bin string, vars []string, extra ...string) *manager {
	t.Helper()
	m := &manager{log: filepath.Join(binDir, fmt.Sprintf("manager-%d.log", time.Now().UnixNano())), health: testenv.FreeAddr(t),
		exited: make(chan struct{})}
	args := []string{
		"--kubeconfig", env.Kubeconfig(),
		"--instance", instance,
		"--default-network", network,
		"--postgres-image", images.Plain["postgres"], "--postgres-kitchen-sink-image", images.KitchenSink["postgres"],
		"--redis-image", images.Plain["redis"], "--redis-kitchen-sink-image", images.KitchenSink["redis"],
		"--mongo-image", images.Plain["mongo"],
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", m.health,
		"--grace-period", "5s",
		"--sweep-interval", "5s",
		"--zap-encoder", "console",
		// Note: as the chaos suite's: on a CI machine running every suite at once a
		// postgres initdb alone can take a minute, past the engines' own deadlines.
		"--probe-deadline", "postgres=5m,redis=3m,mongo=5m",
	}
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(bin, append(args, extra...)...)
	m.cmd.Env = append(os.Environ(), vars...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	// Note: a test binary killed outright (go test's -timeout) takes its
	// managers with it, or they go on refilling pools on the daemon.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(func() {
		m.stop()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(m.log)
			lines := strings.Split(string(b), "\n")
			t.Logf("manager log (last 40 lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	testenv.WaitFor(t, 30*time.Second, poll, "the manager's /readyz", func() bool {
		return exec.Command("curl", "-fsS", "-m", "2", "-o", "/dev/null", "http://"+m.health+"/readyz").Run() == nil
	})
	return m
}

// stop sends SIGTERM and waits, as a rollout does.
func (m *manager) stop() {
	select {
	case <-m.exited:
	default:
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		<-m.exited
	}
}

// kill sends SIGKILL: no cleanup of any kind runs.
func (m *manager) kill() {
	_ = m.cmd.Process.Kill()
	<-m.exited
}

// ended says whether the process exited by itself within timeout.
func (m *manager) ended(timeout time.Duration) bool {
	select {
	case <-m.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

func (m *manager) logText() string {
	b, _ := os.ReadFile(m.log)
	return string(b)
}

var planted struct {
	once sync.Once
	bin  string
	err  error
}

// plantedManager is the manager built with the chaos_plant tag (its crash points
// armed by the environment), built once per run.
func plantedManager(t *testing.T) string {
	t.Helper()
	planted.once.Do(func() {
		planted.bin = filepath.Join(binDir, "manager-planted")
		build := exec.Command("go", "build", "-tags", "chaos_plant", "-o", planted.bin, "./cmd/manager")
		build.Dir = testenv.Root()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			planted.err = fmt.Errorf("building the manager with -tags chaos_plant: %w\n%s", err, out)
		}
	})
	if planted.err != nil {
		t.Fatal(planted.err)
	}
	return planted.bin
}
