package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchSamples measures kubectl apply → Ready for each sample, median of 5.
func TestBenchSamples(t *testing.T) {
	testenv.BenchOnly(t)
	startManager(t)
	ns := newNamespace(t, "bench-samples")
	samples := []struct{ file, name string }{
		{"sandbox_v1alpha1_postgres.yaml", "demo-pg"},
		{"sandbox_v1alpha1_trio.yaml", "demo-trio"},
		{"sandbox_v1alpha1_features.yaml", "demo-features"},
	}
	results := map[string][]time.Duration{}
	for range 5 {
		for _, s := range samples {
			manifest, agentID := sampleManifest(t, s.file)
			startOwner(t, "roboco-agent-"+agentID)
			start := time.Now()
			applyYAML(t, ns, manifest)
			kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/"+s.name, "--timeout=180s")
			results[s.name] = append(results[s.name], time.Since(start))
			kubectl(t, "delete", "-n", ns, "sandbox", s.name, "--timeout=60s")
			docker(t, "rm", "-fv", "roboco-agent-"+agentID)
		}
	}
	for _, s := range samples {
		t.Logf("kubectl apply %s → Ready: median %s of %v", s.file, testenv.Median(results[s.name]).Round(time.Millisecond), results[s.name])
	}
}

// procStats reads a process's CPU time (user+system) and resident memory.
func procStats(t *testing.T, pid int) (cpu time.Duration, rssKiB int) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	cpu = time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	return cpu, rssKiB
}

// idle measures a manager's CPU use over window and its resident memory after it.
func idle(t *testing.T, m *manager, window time.Duration) (cpuPercent float64, rssMiB float64) {
	t.Helper()
	cpu0, _ := procStats(t, m.cmd.Process.Pid)
	time.Sleep(window)
	cpu1, rss := procStats(t, m.cmd.Process.Pid)
	return 100 * (cpu1 - cpu0).Seconds() / window.Seconds(), float64(rss) / 1024
}

// TestBenchIdleManager measures the manager's idle CPU and resident memory with no
// Sandbox (the baseline, same run) and with 50 Ready ones.
func TestBenchIdleManager(t *testing.T) {
	testenv.BenchOnly(t)
	const n, window = 50, time.Minute
	m := startManager(t)
	ns := newNamespace(t, "bench-idle")
	time.Sleep(5 * time.Second)
	baseCPU, baseRSS := idle(t, m, window)

	for i := range n {
		applyYAML(t, ns, sandboxYAML(fmt.Sprintf("idle-%d", i), fmt.Sprintf("idle-%d-%s", i, runID),
			"{policy: None}", "[{engine: redis, resources: {memory: 64Mi, cpu: 250m}}]"))
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox", "--all", "--timeout=600s")
	time.Sleep(5 * time.Second)
	cpu, rss := idle(t, m, window)
	t.Logf("manager idle over %s: no Sandbox %.2f%% CPU, %.1f MiB RSS; %d Ready Sandboxes %.2f%% CPU, %.1f MiB RSS (×%.2f memory)",
		window, baseCPU, baseRSS, n, cpu, rss, rss/baseRSS)
	kubectl(t, "delete", "-n", ns, "sandboxes", "--all", "--timeout=300s")
}
