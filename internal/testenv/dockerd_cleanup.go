package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Teardown stops dockerd and removes everything the daemon made: its containers
// and volumes go with its data roots (alternates included), then the bridge and
// the runtime files.
func (d *Dockerd) Teardown() {
	if d.process() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if out, err := d.Docker(ctx, "ps", "-aq"); err == nil && strings.TrimSpace(out) != "" {
			_, _ = d.Docker(ctx, append([]string{"rm", "-fv"}, strings.Fields(out)...)...)
		}
		cancel()
	}
	d.Stop()
	alternates, _ := filepath.Glob(d.DataRoot + "-*")
	for _, dir := range append([]string{d.DataRoot}, alternates...) {
		// Note: a daemon killed after its stop timeout, one under --live-restore, or
		// the other host's (whose containers only that daemon could list) leaves
		// them running.
		killShims(d.ExecRootFor(dir))
		// Note: dockerd may leave overlay mounts under its data root, and netns
		// mounts under its exec root.
		for _, m := range append(MountsUnder(dir), MountsUnder(d.ExecRootFor(dir))...) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(dir)
		_ = os.RemoveAll(d.ExecRootFor(dir))
	}
	_ = exec.Command("ip", "link", "del", d.Bridge).Run()
	_ = os.Remove(d.Socket)
	_ = os.Remove(d.PidFile)
	_ = os.Remove(d.ownerFile())
	live.Delete(d.Name)
}

// StaleDockerds are the names of the daemons named prefix* whose test process is
// gone (killed outright, it tore nothing down): their socket, pid or owner file
// is left under /run.
func StaleDockerds(prefix string) []string {
	var names []string
	for _, ext := range []string{".owner", ".sock", ".pid"} {
		found, _ := filepath.Glob("/run/" + prefix + "*" + ext)
		for _, f := range found {
			name := strings.TrimSuffix(filepath.Base(f), ext)
			if !slices.Contains(names, name) && !ownerRuns(name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// ownerRuns says whether the test process that started the daemon name runs:
// another one, or this one (a parallel test's) when it has not torn it down. A
// file naming this process's pid but no daemon it claimed is a killed run's,
// whose pid came round again.
func ownerRuns(name string) bool {
	b, err := os.ReadFile("/run/" + name + ".owner")
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return false
	}
	if pid == os.Getpid() {
		_, ours := live.Load(name)
		return ours
	}
	return syscall.Kill(pid, 0) == nil
}

// Shims are the containerd shims (pids) of the daemon whose exec root is
// execRoot: their command line names its containerd socket.
func Shims(execRoot string) []int {
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

// MountsUnder are the mount points at or below dir (or dir-*).
func MountsUnder(dir string) []string {
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
	ss := Shims(execRoot)
	var inits []int
	for _, shim := range ss {
		inits = append(inits, children(shim)...)
	}
	for _, pid := range append(inits, ss...) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !slices.ContainsFunc(append(inits, ss...), Alive) {
			return
		}
	}
}

// Alive says whether pid runs (a zombie has ended).
func Alive(pid int) bool {
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
