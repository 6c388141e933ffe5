package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// buildManager builds cmd/manager into dir; with plant set, a chaos_plant build
// (the planted bug is chosen at run time by chaosplant.Env).
func buildManager(dir string, plant bool) (string, error) {
	name, args := "manager", []string{"build", "-o"}
	if plant {
		name, args = "manager-planted", append(args[:1], "-tags", "chaos_plant", "-o")
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", append(args, bin, "./cmd/manager")...)
	build.Dir = testenv.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %w\n%s", err, out)
	}
	return bin, nil
}

// manager runs the manager binary as a Deployment would: restarted whenever it
// exits (after a second, as a kubelet's first backoff), until stop.
type manager struct {
	bin     string
	args    []string
	env     []string
	logPath string
	metrics string // its /metrics' loopback address

	mu       sync.Mutex
	cmd      *exec.Cmd
	stopped  bool
	killed   bool
	hold     time.Time     // no restart before
	away     bool          // no restart until back
	exited   chan struct{} // closed when the current process ends
	exits    int           // exits the suite did not cause
	finished chan struct{}
}

func (m *manager) start() {
	m.finished = make(chan struct{})
	go m.supervise()
}

func (m *manager) supervise() {
	defer close(m.finished)
	for {
		m.mu.Lock()
		if m.stopped {
			m.mu.Unlock()
			return
		}
		wait := time.Until(m.hold)
		if m.away {
			wait = 100 * time.Millisecond
		}
		m.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
			continue
		}
		cmd, err := m.spawn()
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		_ = cmd.Wait()
		m.mu.Lock()
		if !m.killed && !m.stopped && !m.away {
			m.exits++
		}
		m.killed = false
		close(m.exited)
		m.mu.Unlock()
		time.Sleep(time.Second)
	}
}

func (m *manager) spawn() (*exec.Cmd, error) {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Env = append(os.Environ(), m.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Note: a test process killed outright takes its manager with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		_ = logf.Close()
		return nil, fmt.Errorf("stopped")
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	// Note: the child holds its own copy of the log's descriptor.
	_ = logf.Close()
	m.cmd, m.exited = cmd, make(chan struct{})
	return cmd, nil
}

// kill sends SIGKILL: no cleanup of any kind runs. It comes back after down.
func (m *manager) kill(down time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold = time.Now().Add(down)
	if m.cmd != nil && m.cmd.ProcessState == nil {
		m.killed = true
		_ = m.cmd.Process.Kill()
	}
}

// leave stops the process as a rollout does (SIGTERM), waits for it to end,
// and starts no other until back.
func (m *manager) leave() {
	m.mu.Lock()
	m.away = true
	exited := m.exited
	if m.cmd != nil && m.cmd.ProcessState == nil {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	m.mu.Unlock()
	if exited == nil {
		return
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		m.mu.Lock()
		_ = m.cmd.Process.Kill()
		m.mu.Unlock()
		<-exited
	}
}

// back lets the supervisor start the process again.
func (m *manager) back() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.away = false
}

// identity is the replica identity the current process logged at start (""
// before it did): what DockerHost status.manager names.
func (m *manager) identity() string {
	b, _ := os.ReadFile(m.logPath)
	s := string(b)
	i := strings.LastIndex(s, "Sharing the Docker hosts with the other replicas")
	if i < 0 {
		return ""
	}
	if match := identityField.FindStringSubmatch(s[i:]); match != nil {
		return match[1]
	}
	return ""
}

var identityField = regexp.MustCompile(`"identity": "([^"]+)"`)

// stop sends SIGTERM, as a rollout does, and waits for the process to end.
func (m *manager) stop() {
	m.mu.Lock()
	m.stopped = true
	if m.cmd != nil && m.cmd.ProcessState == nil {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	m.mu.Unlock()
	select {
	case <-m.finished:
	case <-time.After(30 * time.Second):
		m.mu.Lock()
		_ = m.cmd.Process.Kill()
		m.mu.Unlock()
		<-m.finished
	}
}

// panics returns the first panic the manager's log shows, if any.
func (m *manager) panics() string {
	b, _ := os.ReadFile(m.logPath)
	s := string(b)
	if i := strings.Index(s, "panic: "); i >= 0 {
		return s[i:min(len(s), i+1500)]
	}
	return ""
}

// tail is the log's last n lines, stack traces left out.
func (m *manager) tail(n int) string {
	b, _ := os.ReadFile(m.logPath)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "sigs.k8s.io/") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// plantEnv is the environment that plants bug in a chaos_plant build.
func plantEnv(bug string) []string {
	if bug == "" {
		return nil
	}
	return []string{chaosplant.Env + "=" + bug}
}
