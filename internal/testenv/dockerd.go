package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Dockerd is a Docker daemon of a suite's own, beside the machine's: its socket,
// data root, exec root, pid file and bridge, so that stopping or killing it
// disturbs no other suite. It may also run on an alternate data root
// (DataRoot+"-"+suffix, with ExecRoot+"-"+suffix as its exec root), which is to
// a client another Docker host behind the same socket. It needs root.
type Dockerd struct {
	// Name names its files under /run: <Name>.sock, <Name>.pid, <Name>.owner and
	// the exec root <Name>.
	Name     string
	Socket   string // unix path
	ExecRoot string
	PidFile  string
	// Bridge is the interface its default network uses (at most 15 characters);
	// Subnet is the bridge's address, e.g. 10.213.40.1/24.
	Bridge, Subnet string
	DataRoot       string
	LogPath        string
	// Flags are more dockerd flags, e.g. --live-restore.
	Flags []string
	cmd   *exec.Cmd
}

// NewDockerd describes a daemon; CreateBridge and Start make it.
func NewDockerd(name, bridge, subnet, dataRoot, logPath string) *Dockerd {
	return &Dockerd{Name: name, Socket: "/run/" + name + ".sock", ExecRoot: "/run/" + name, PidFile: "/run/" + name + ".pid",
		Bridge: bridge, Subnet: subnet, DataRoot: dataRoot, LogPath: logPath}
}

// Host is the daemon's address, as DOCKER_HOST says it.
func (d *Dockerd) Host() string { return "unix://" + d.Socket }

// ExecRootFor is the exec root of the daemon on dataRoot: each data root has its
// own, since a containerd task of one left in the other's refuses a restart.
func (d *Dockerd) ExecRootFor(dataRoot string) string {
	return d.ExecRoot + strings.TrimPrefix(dataRoot, d.DataRoot)
}

func (d *Dockerd) ownerFile() string { return "/run/" + d.Name + ".owner" }

// claim records this test process as the daemon's: StaleDockerds leaves a daemon
// alone only while that process lives, and, in that process, until Teardown.
func (d *Dockerd) claim() {
	live.Store(d.Name, true)
	_ = os.WriteFile(d.ownerFile(), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// live names the daemons this process claimed and has not torn down: a test
// running in parallel with another of the same process leaves them be.
var live sync.Map

// CreateBridge makes the bridge the daemon's default network uses (dockerd only
// creates docker0 by itself).
func (d *Dockerd) CreateBridge() error {
	d.claim()
	for _, args := range [][]string{
		{"link", "add", d.Bridge, "type", "bridge"},
		{"addr", "add", d.Subnet, "dev", d.Bridge},
		{"link", "set", d.Bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Start runs dockerd on dataRoot (DataRoot or an alternate) and waits until it
// answers.
func (d *Dockerd) Start(dataRoot string) error {
	d.claim()
	if d.process() == nil {
		// Note: a daemon killed outright leaves its pid file, which the next refuses.
		_ = os.Remove(d.PidFile)
	}
	logf, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	args := append([]string{"--host", d.Host(), "--data-root", dataRoot, "--exec-root", d.ExecRootFor(dataRoot),
		"--pidfile", d.PidFile, "--bridge", d.Bridge, "--iptables=false", "--ip-masq=false"}, d.Flags...)
	d.cmd = exec.Command("dockerd", args...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Note: its own process group, so that a signal meant for the test leaves it be
	// and Kill can stop it with what it started (containerd).
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	go func(c *exec.Cmd) { _ = c.Wait(); _ = logf.Close() }(d.cmd)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if exec.Command("docker", "-H", d.Host(), "version").Run() == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("dockerd on %s did not answer within 60s (log %s)", d.Socket, d.LogPath)
}

// Stop sends SIGTERM (dockerd then stops its containers, unless it runs with
// --live-restore) and waits for the process to go.
func (d *Dockerd) Stop() {
	p := d.process()
	if p == nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && Alive(p.Pid); {
		time.Sleep(100 * time.Millisecond)
	}
	if Alive(p.Pid) {
		d.Kill()
	}
	d.cmd = nil
}

// Kill sends SIGKILL to dockerd and its containerd, as a crash ends them: the
// containers' shims outlive them (and the containers run on under --live-restore).
func (d *Dockerd) Kill() {
	p := d.process()
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && Alive(p.Pid); {
		time.Sleep(50 * time.Millisecond)
	}
	d.cmd = nil
}

// Pid is the running dockerd's process id (0: none).
func (d *Dockerd) Pid() int {
	if p := d.process(); p != nil {
		return p.Pid
	}
	return 0
}

// process is the running dockerd: this run's, or one an earlier run left (its
// pid file).
func (d *Dockerd) process() *os.Process {
	if d.cmd != nil && d.cmd.Process != nil && Alive(d.cmd.Process.Pid) {
		return d.cmd.Process
	}
	b, err := os.ReadFile(d.PidFile)
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !Alive(pid) {
		return nil
	}
	p, _ := os.FindProcess(pid)
	return p
}

// Docker runs the docker CLI against this daemon.
func (d *Dockerd) Docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", append([]string{"-H", d.Host()}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// LoadImages copies images from the default daemon (docker save | load), or
// pulls them from the local registry when the default daemon lacks one.
func (d *Dockerd) LoadImages(refs []string) error {
	for _, ref := range refs {
		save := fmt.Sprintf("docker save %q | docker -H %q load -q", ref, d.Host())
		if out, err := exec.Command("sh", "-c", save).CombinedOutput(); err == nil {
			continue
		} else if out2, err2 := exec.Command("docker", "-H", d.Host(), "pull", "-q", ref).CombinedOutput(); err2 != nil {
			return fmt.Errorf("image %s: save|load: %w: %s; pull: %w: %s", ref, err, out, err2, out2)
		}
	}
	return nil
}

// LogTail is the last lines of the daemon's log, for a failed test's report.
func (d *Dockerd) LogTail(lines int) string {
	b, _ := os.ReadFile(d.LogPath)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
