package e2e

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// seedsTrace is TestBenchSeedsRunning's optional look inside the manager
// (SANDBOX_BENCH_SEEDS_TRACE=1): its Docker requests through the counting
// proxy, and its passes from controller-runtime's V(5) lines, per phase. Both
// cost the manager something (a hop per request, a log line per pass), so the
// figures of a traced run are not the benchmark's.
type seedsTrace struct {
	t     *testing.T
	calls *testenv.DockerCalls
	m     *manager
}

// managerArgs are the flags that route the manager through the trace, if any.
func newSeedsTrace(t *testing.T) (*seedsTrace, []string) {
	if os.Getenv("SANDBOX_BENCH_SEEDS_TRACE") == "" {
		return nil, nil
	}
	tr := &seedsTrace{t: t, calls: testenv.CountDockerCalls(t, dockerDaemon())}
	return tr, []string{"--docker-host", tr.calls.Host,
		"--zap-encoder", "json", "--zap-time-encoding", "rfc3339nano", "--zap-log-level", "5"}
}

func (tr *seedsTrace) begin() {
	if tr != nil {
		tr.calls.Trace()
	}
}

// dockerIDs are the container and exec IDs in a request's path.
var dockerIDs = regexp.MustCompile(`/[0-9a-f]{64}`)

// end says, for the phase [from, now], the Docker requests by kind (per
// second, mean time) and the Sandbox controller's passes per namespace.
func (tr *seedsTrace) end(phase string, from time.Time) {
	if tr == nil {
		return
	}
	t, now := tr.t, time.Now()
	window := now.Sub(from).Seconds()
	type kind struct {
		n    int
		took time.Duration
	}
	kinds := map[string]*kind{}
	for _, r := range tr.calls.Traced() {
		k := r.Method + " " + dockerIDs.ReplaceAllString(apiVersionPrefix.ReplaceAllString(r.Path, ""), "/{id}")
		if kinds[k] == nil {
			kinds[k] = &kind{}
		}
		kinds[k].n++
		kinds[k].took += r.Took
	}
	t.Logf("  trace of %s (%.0fs): Docker requests, per second and mean time:", phase, window)
	for _, k := range sortedKeys(kinds) {
		t.Logf("    %-40s %6d  %5.2f/s  mean %s", k, kinds[k].n, float64(kinds[k].n)/window, ms(kinds[k].took/time.Duration(kinds[k].n)))
	}
	t.Logf("  trace of %s: the sandbox controller's passes per namespace (V(5) lines):", phase)
	for ns, ds := range passesByNamespace(managerLog(t, tr.m), from, now) {
		if !strings.HasSuffix(ns, runID) { // another run's containers' events, on the shared daemon
			continue
		}
		s := slices.Sorted(slices.Values(ds))
		t.Logf("    %-32s %5d passes, p50 %s, p99 %s, max %s, over 1s %d", ns, len(s), ms(s[len(s)/2]), ms(s[len(s)*99/100]),
			ms(s[len(s)-1]), len(s)-indexOver(s, time.Second))
	}
}

// passesByNamespace are the sandbox controller's passes that began in
// [from, to], from its "Reconciling" and "Reconcile done…" lines.
func passesByNamespace(lines []logLine, from, to time.Time) map[string][]time.Duration {
	begun := map[string]logLine{}
	out := map[string][]time.Duration{}
	for _, l := range lines {
		if l.Fields["controller"] != "sandbox" {
			continue
		}
		id, _ := l.Fields["reconcileID"].(string)
		switch {
		case l.Msg == "Reconciling":
			begun[id] = l
		case strings.HasPrefix(l.Msg, "Reconcile done") || l.Msg == "Reconcile successful" || l.Msg == "Reconciler error":
			b, ok := begun[id]
			if !ok || b.At.Before(from) || b.At.After(to) {
				continue
			}
			ns, _ := b.Fields["namespace"].(string)
			out[ns] = append(out[ns], l.At.Sub(b.At))
		}
	}
	return out
}

// indexOver is the index of the first of sorted ds over d.
func indexOver(ds []time.Duration, d time.Duration) int {
	i, _ := slices.BinarySearch(ds, d+1)
	return i
}

// counterSum is the sum of a counter's samples, every label, in the manager's
// /metrics at addr.
func counterSum(t *testing.T, addr, name string) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(metricsText(t, addr), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, " ")) {
			f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(f) > 0 {
				v, _ := strconv.ParseFloat(f[0], 64)
				sum += v
			}
		}
	}
	return sum
}

func perSecond(n float64, d time.Duration) string {
	return fmt.Sprintf("%.0f (%.2f/s)", n, n/d.Seconds())
}
