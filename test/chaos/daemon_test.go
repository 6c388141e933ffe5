package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon is a Docker engine of the suite's own: its socket, data root, exec root,
// pid file and bridge, so that restarting it disturbs no other suite (they share
// the default one). Its data root can be swapped for another one's (alt), which
// is to the manager a different Docker host behind the same socket.
type daemon struct {
	id       string
	socket   string // unix path
	execRoot string
	pidFile  string
	bridge   string
	dataRoot string // the suite's host
	altRoot  string // another host, for the host-swap fault
	logPath  string
	cmd      *exec.Cmd
	current  string // the data root the running dockerd uses
}

func newDaemon(id, logDir string) *daemon {
	return &daemon{
		id:       id,
		socket:   "/run/sbxc-" + id + ".sock",
		execRoot: "/run/sbxc-" + id,
		pidFile:  "/run/sbxc-" + id + ".pid",
		bridge:   "sbxc" + id,
		dataRoot: "/var/lib/sandbox-chaos-" + id,
		altRoot:  "/var/lib/sandbox-chaos-" + id + "-alt",
		logPath:  filepath.Join(logDir, "dockerd.log"),
	}
}

func (d *daemon) execRootFor(dataRoot string) string {
	if dataRoot == d.altRoot {
		return d.execRoot + "-alt"
	}
	return d.execRoot
}

func (d *daemon) ownerFile() string { return "/run/sbxc-" + d.id + ".owner" }

// host is the daemon's address, as DOCKER_HOST says it.
func (d *daemon) host() string { return "unix://" + d.socket }

// createBridge makes the bridge dockerd's default network uses (dockerd only
// creates docker0 by itself); the subnet is picked from the id.
func (d *daemon) createBridge() error {
	octet := 0
	for _, c := range d.id {
		octet = (octet*31 + int(c)) % 200
	}
	for _, args := range [][]string{
		{"link", "add", d.bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("10.213.%d.1/24", octet+20), "dev", d.bridge},
		{"link", "set", d.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// start runs dockerd on dataRoot and waits until it answers.
func (d *daemon) start(dataRoot string) error {
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	// Note: an exec root of each data root's own: the other host's containerd
	// state must not collide with this one's (a task left there refuses a restart).
	d.cmd = exec.Command("dockerd", "--host", d.host(), "--data-root", dataRoot, "--exec-root", d.execRootFor(dataRoot),
		"--pidfile", d.pidFile, "--bridge", d.bridge, "--iptables=false", "--ip-masq=false")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Note: its own process group, so that a signal meant for the test leaves it be
	// and the cleanup can stop it with what it started (containerd).
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	d.current = dataRoot
	// The test process that runs this daemon: removeStale leaves a daemon alone
	// only while that process lives.
	_ = os.WriteFile(d.ownerFile(), []byte(strconv.Itoa(os.Getpid())), 0o600)
	go func(c *exec.Cmd) { _ = c.Wait(); _ = logf.Close() }(d.cmd)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if exec.Command("docker", "-H", d.host(), "version").Run() == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("dockerd on %s did not answer within 60s (log %s)", d.socket, d.logPath)
}

// stop sends SIGTERM (dockerd then stops its containers) and waits for the
// process to go.
func (d *daemon) stop() {
	p := d.process()
	if p == nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && p.Signal(syscall.Signal(0)) == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if p.Signal(syscall.Signal(0)) == nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		time.Sleep(time.Second)
	}
	d.cmd = nil
}

// process is the running dockerd: this run's, or one an earlier run left (its
// pid file).
func (d *daemon) process() *os.Process {
	if d.cmd != nil && d.cmd.Process != nil {
		return d.cmd.Process
	}
	b, err := os.ReadFile(d.pidFile)
	if err != nil {
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return nil
	}
	p, _ := os.FindProcess(pid)
	return p
}

// restart stops dockerd and starts it again on dataRoot.
func (d *daemon) restart(dataRoot string) error {
	d.stop()
	return d.start(dataRoot)
}

// docker runs the docker CLI against this daemon.
func (d *daemon) docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", append([]string{"-H", d.host()}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// loadImages copies images from the default daemon (docker save | load), or
// pulls them from the local registry when the default daemon lacks one.
func (d *daemon) loadImages(refs []string) error {
	for _, ref := range refs {
		save := fmt.Sprintf("docker save %q | docker -H %q load -q", ref, d.host())
		if out, err := exec.Command("sh", "-c", save).CombinedOutput(); err == nil {
			continue
		} else if out2, err2 := exec.Command("docker", "-H", d.host(), "pull", "-q", ref).CombinedOutput(); err2 != nil {
			return fmt.Errorf("image %s: save|load: %w: %s; pull: %w: %s", ref, err, out, err2, out2)
		}
	}
	return nil
}

// teardown stops dockerd and removes everything the daemon made: its containers
// and volumes go with its data roots, then the bridge and the runtime files.
func (d *daemon) teardown() {
	if d.process() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if out, err := d.docker(ctx, "ps", "-aq"); err == nil && strings.TrimSpace(out) != "" {
			_, _ = d.docker(ctx, append([]string{"rm", "-fv"}, strings.Fields(out)...)...)
		}
		cancel()
	}
	d.stop()
	for _, dir := range []string{d.dataRoot, d.altRoot} {
		// Note: a daemon killed after its stop timeout (or the other host's, whose
		// containers only that daemon could list) leaves them running.
		killShims(d.execRootFor(dir))
		// Note: dockerd may leave overlay mounts under its data root, and netns
		// mounts under its exec root.
		for _, m := range append(mountsUnder(dir), mountsUnder(d.execRootFor(dir))...) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(dir)
	}
	_ = exec.Command("ip", "link", "del", d.bridge).Run()
	_ = os.RemoveAll(d.execRoot)
	_ = os.RemoveAll(d.execRoot + "-alt")
	_ = os.Remove(d.socket)
	_ = os.Remove(d.pidFile)
	_ = os.Remove(d.ownerFile())
}

// removeStale removes what an earlier run killed outright left behind: the
// daemons (stopped, with their containers), data roots, exec roots and bridges
// of suite daemons whose test process is gone.
func removeStale() {
	roots, _ := filepath.Glob("/run/sbxc-*")
	seen := map[string]bool{}
	for _, root := range roots {
		id := strings.TrimSuffix(filepath.Base(root), filepath.Ext(root))
		id = strings.TrimSuffix(strings.TrimPrefix(id, "sbxc-"), "-alt")
		if seen[id] || ownerRuns(id) {
			continue
		}
		seen[id] = true
		newDaemon(id, os.TempDir()).teardown()
	}
}

// ownerRuns says whether the test process that started the suite daemon id runs.
func ownerRuns(id string) bool {
	b, err := os.ReadFile("/run/sbxc-" + id + ".owner")
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil
}

// shims are the containerd shims (pids) of the daemon whose exec root is
// execRoot: their command line names its containerd socket.
func shims(execRoot string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "containerd-shim") || !strings.Contains(string(b), execRoot+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder are the mount points at or below dir.
func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/mounts")
	var ms []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/") || strings.HasPrefix(f[1], dir+"-")) {
			ms = append(ms, f[1])
		}
	}
	return ms
}

// killShims kills the containers of the daemon whose exec root is execRoot
// (each shim's children are their init processes; the rest of a container's
// pid namespace goes with its init), then the shims.
func killShims(execRoot string) {
	ss := shims(execRoot)
	var inits []int
	for _, shim := range ss {
		inits = append(inits, children(shim)...)
	}
	for _, pid := range append(inits, ss...) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !slices.ContainsFunc(append(inits, ss...), alive) {
			return
		}
	}
}

// alive says whether pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// children are the processes whose parent is pid.
func children(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Note: the command name (field 2) may hold spaces; the fields after its ')' do not.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if kid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				kids = append(kids, kid)
			}
		}
	}
	return kids
}
