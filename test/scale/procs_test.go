package scale

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// proc is one process the benchmark runs, its output in a log file.
type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once the process has ended
}

// startProc runs bin with args, its output in logDir/name.log, until stop (or
// the test's end).
func startProc(t *testing.T, logDir, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{log: filepath.Join(logDir, name+".log"), exited: make(chan struct{})}
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		_ = logf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop signals the process and waits for it to end.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
		<-p.exited
	}
}

// rssMiB is the process's resident memory (VmRSS).
func (p *proc) rssMiB(t *testing.T) float64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.Fields(v)[0])
			return float64(kib) / 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// cpuSeconds is the process's CPU time so far (user and system).
func (p *proc) cpuSeconds(t *testing.T) float64 {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return float64(utime+stime) / 100 // USER_HZ
}

// get fetches url's body; an error for anything but 200.
func get(url string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), err
}

// fakeHosts is the fakedocker process: n hosts, one socket each, and its
// statistics on stats.
type fakeHosts struct {
	*proc
	endpoints []string
	stats     string
}

// startFakeHosts runs fakedocker with n hosts in a directory of its own.
func startFakeHosts(t *testing.T, logDir string, n int) *fakeHosts {
	t.Helper()
	dir, err := os.MkdirTemp("", "scale-hosts-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	f := &fakeHosts{stats: testenv.FreeAddr(t)}
	cmd := exec.Command(filepath.Join(binDir, "fakedocker"), "--hosts", strconv.Itoa(n), "--dir", dir, "--stats", f.stats)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(logDir, "fakedocker.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.proc = &proc{cmd: cmd, log: logf.Name(), exited: make(chan struct{})}
	lines := bufio.NewScanner(out)
	for len(f.endpoints) < n && lines.Scan() {
		if _, addr, ok := strings.Cut(lines.Text(), " "); ok {
			f.endpoints = append(f.endpoints, addr)
		}
	}
	go func() {
		_, _ = io.Copy(logf, out) // the statistics it prints on its way out
		_ = cmd.Wait()
		_ = logf.Close()
		close(f.exited)
	}()
	t.Cleanup(func() { f.stop(syscall.SIGTERM) })
	if len(f.endpoints) < n {
		t.Fatalf("fakedocker announced %d of %d hosts (log %s)", len(f.endpoints), n, f.log)
	}
	testenv.WaitFor(t, 30*time.Second, 100*time.Millisecond, "fakedocker's statistics", func() bool {
		_, err := get("http://" + f.stats + "/stats")
		return err == nil
	})
	return f
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes: the benchmark
// shares two cores with whatever else runs.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
