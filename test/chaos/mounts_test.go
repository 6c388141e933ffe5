package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// busyLayer finds the layers a daemon of the suite failed to remove as busy.
var busyLayer = regexp.MustCompile(`unlinkat (\S+)/merged: device or resource busy`)

// reportBusyMounts writes, for every container layer a daemon of the suite
// failed to remove because its mount was busy (a deleted Sandbox then stays,
// its teardown retrying), which mount namespaces still hold that layer's
// mount and which processes live in them, to busy-mounts.txt in the kept
// logs: what held the mount is gone once the run has ended.
func (h *harness) reportBusyMounts(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(h.dir, "dockerd-*.log"))
	layers := map[string]bool{}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for _, m := range busyLayer.FindAllSubmatch(b, -1) {
			layers[filepath.Base(string(m[1]))] = true
		}
	}
	if len(layers) == 0 {
		return
	}
	var out strings.Builder
	for layer := range layers {
		fmt.Fprintf(&out, "layer %s:\n", layer)
		for ns, holders := range mountHolders(layer) {
			fmt.Fprintf(&out, "  mount namespace %s, %d processes, e.g. %s\n", ns, len(holders.pids), holders.sample())
			for _, l := range holders.lines {
				fmt.Fprintf(&out, "    %s\n", l)
			}
		}
	}
	path := filepath.Join(h.dir, "busy-mounts.txt")
	_ = os.WriteFile(path, []byte(out.String()), 0o600)
	t.Logf("a daemon could not remove %d busy container layers; who holds them: %s", len(layers), path)
}

// holders are the processes of one mount namespace and its mountinfo lines
// that name a layer.
type holders struct {
	pids  []string
	lines []string
}

func (h holders) sample() string {
	var s []string
	for _, pid := range h.pids[:min(len(h.pids), 4)] {
		cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		s = append(s, pid+" "+strings.ReplaceAll(string(cmd[:min(len(cmd), 80)]), "\x00", " "))
	}
	return strings.Join(s, "; ")
}

// mountHolders maps each mount namespace whose mount table names layer to
// its processes and those lines.
func mountHolders(layer string) map[string]*holders {
	found := map[string]*holders{}
	infos, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, mi := range infos {
		pid := filepath.Base(filepath.Dir(mi))
		ns, err := os.Readlink("/proc/" + pid + "/ns/mnt")
		if err != nil {
			continue
		}
		if h := found[ns]; h != nil {
			h.pids = append(h.pids, pid)
			continue
		}
		b, err := os.ReadFile(mi)
		if err != nil || !strings.Contains(string(b), layer) {
			continue
		}
		h := &holders{pids: []string{pid}}
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(l, layer) && !slices.Contains(h.lines, l) {
				h.lines = append(h.lines, l)
			}
		}
		found[ns] = h
	}
	return found
}

// A mount that only another mount namespace holds is found there, with a
// process of that namespace.
func TestMountHoldersFindsAnotherNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare)")
	}
	layer := "chaos-layer-" + strings.ReplaceAll(t.Name(), "/", "-")
	dir := filepath.Join(t.TempDir(), layer, "merged")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The child mounts in its own namespace, says so, and waits for its stdin to close.
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t tmpfs none "$1" && echo up && read -r _`, "sh", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("the namespace's mount: %q, %v", line, err)
	}
	found := mountHolders(layer)
	if len(found) != 1 {
		t.Fatalf("%d namespaces hold %s, want 1: %v", len(found), layer, found)
	}
	for _, h := range found {
		if !slices.Contains(h.pids, strconv.Itoa(cmd.Process.Pid)) || len(h.lines) != 1 || !strings.Contains(h.lines[0], dir) {
			t.Errorf("holders %+v: want the child's pid %d and its one mount of %s", h, cmd.Process.Pid, dir)
		}
	}
}
