package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestBenchPoolClaimSteps breaks claims of a postgres+redis Sandbox (pools of 5,
// full before each) into their steps, from outside the manager: its API requests
// (through a tracing proxy), its Docker requests (through the counting proxy, its
// --docker-host) and its passes (controller-runtime's V(5) lines). Each step is
// timed from the Sandbox's create; medians over SANDBOX_BENCH_STEPS claims
// (default 7), and the whole timeline of the median claim. With
// SANDBOX_BENCH_STEPS_COLD set, the Sandboxes start cold (policy Never). The proxies add a
// hop to every request, so these claims are slower than TestBenchPoolClaim's.
func TestBenchPoolClaimSteps(t *testing.T) {
	testenv.BenchOnly(t)
	n := benchCount("SANDBOX_BENCH_STEPS", 7)
	cold := os.Getenv("SANDBOX_BENCH_STEPS_COLD") != "" // Sandboxes of policy Never: the cold path's steps
	api := traceAPI(t)
	calls := testenv.CountDockerCalls(t, dockerDaemon())
	m := startManager(t, "--kubeconfig", api.kubeconfig, "--docker-host", calls.Host,
		"--zap-encoder", "json", "--zap-time-encoding", "rfc3339nano", "--zap-log-level", "5")
	b := newPoolBench(t, "bench-steps", 5, "postgres", "redis")
	t.Logf("load average at start: %s", loadAvg())
	var claims []claimSteps
	for i := range n {
		b.waitFull(3 * time.Minute)
		settle(t, time.Minute) // the pools' last passes and refills are over
		api.trace()
		calls.Trace()
		name := fmt.Sprintf("steps-%d", i)
		stopPerf := perfSched(t, name)
		took := b.createReady(b.sandbox(name, cold))
		stopPerf(b.started)
		if !cold {
			b.claimed++
		}
		time.Sleep(2 * time.Second) // the passes that follow Ready
		claims = append(claims, claimSteps{name: name, start: b.started, ready: took, api: api.traced(), docker: calls.Traced()})
	}
	logs := managerLog(t, m)
	for i := range claims {
		claims[i].label(t, b, logs)
	}
	t.Logf("load average at end: %s; the Claimed events say: %s", loadAvg(), claimedEvents(t, b.ns))
	printSteps(t, claims)
}

// claimSteps is what one claim's traces saw.
type claimSteps struct {
	name        string
	start       time.Time
	ready       time.Duration
	api, docker []testenv.Request
	steps       []step
}

// step is one request or log line, labelled, from the Sandbox's create.
type step struct {
	what     string
	at, took time.Duration
	ours     bool // the Sandbox's (not a pool's, nor an event's create)
}

var (
	apiVersionPrefix = regexp.MustCompile(`^/v[0-9.]+`)
	eventSuffix      = regexp.MustCompile(`\.[0-9a-f]{16}$`)
	execCreate       = regexp.MustCompile(`/containers/(\w+)/exec$`)
	execStart        = regexp.MustCompile(`/exec/(\w+)/start$`)
)

// execsOf adds to owners the execs started in the containers it holds. The
// trace names an exec only by its ID, and the driver starts each exec as soon as
// it is created: each create, in the order they ended, is matched with the first
// start after it not matched yet (every container's, a pool's probes too).
func execsOf(docker []testenv.Request, owners map[string]string) {
	var creates []testenv.Request
	for _, r := range docker {
		if execCreate.MatchString(r.Path) {
			creates = append(creates, r)
		}
	}
	end := func(r testenv.Request) time.Time { return r.At.Add(r.Took) }
	slices.SortStableFunc(creates, func(a, b testenv.Request) int { return end(a).Compare(end(b)) })
	taken := map[int]bool{}
	for _, create := range creates {
		for i, start := range docker {
			s := execStart.FindStringSubmatch(start.Path)
			if s == nil || taken[i] || start.At.Before(end(create)) {
				continue
			}
			taken[i] = true
			if e := owners[execCreate.FindStringSubmatch(create.Path)[1]]; e != "" {
				owners[s[1]] = e + " exec"
			}
			break
		}
	}
}

// listedBy names the label keys a container list filters on (a Sandbox lists by
// its uid, and by namespace for its claimed members; a pool by its pool-uid).
func listedBy(query string) string {
	q, _ := url.ParseQuery(query)
	var filters struct {
		Label map[string]bool `json:"label"`
	}
	_ = json.Unmarshal([]byte(q.Get("filters")), &filters)
	var keys []string
	for l := range filters.Label {
		k, _, _ := strings.Cut(l, "=")
		keys = append(keys, strings.TrimPrefix(k, "sandbox.roboco.io/"))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// label names each traced request after what it touches: the Sandbox, its
// claimed members by engine, a pool's member, an exec.
func (c *claimSteps) label(t *testing.T, b *poolBench, logs []logLine) {
	t.Helper()
	sb, err := b.dyn.Resource(sandboxes).Namespace(b.ns).Get(context.Background(), c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{} // claimed member IDs and their rotate execs' IDs → engine
	claims, _, _ := unstructured.NestedMap(sb.Object, "status", "claims")
	for e := range claims {
		if id, _, _ := unstructured.NestedString(sb.Object, "status", "claims", e, "containerID"); id != "" {
			owners[id] = e
		}
	}
	add := func(what string, at time.Time, took time.Duration, ours bool) {
		c.steps = append(c.steps, step{what: what, at: at.Sub(c.start), took: took, ours: ours})
	}
	for _, r := range c.api {
		p := strings.NewReplacer("/apis/sandbox.roboco.io/v1alpha1/namespaces/"+b.ns+"/", "", "/api/v1/namespaces/"+b.ns+"/", "",
			"/apis/events.k8s.io/v1/namespaces/"+b.ns+"/", "", c.name, "<sb>").Replace(r.Path)
		p = eventSuffix.ReplaceAllString(p, ".*")
		add("api "+r.Method+" "+p, r.At, r.Took, strings.Contains(p, "<sb>") || p == "secrets")
	}
	slices.SortFunc(c.docker, func(a, b testenv.Request) int { return a.At.Compare(b.At) })
	execsOf(c.docker, owners)
	for _, r := range c.docker {
		p, ours := apiVersionPrefix.ReplaceAllString(r.Path, ""), false
		for _, part := range strings.Split(p, "/")[1:] {
			if e, ok := owners[part]; ok {
				p, ours = strings.Replace(p, part, "{"+e+"}", 1), true
			} else if len(part) == 64 {
				p = strings.Replace(p, part, "{id}", 1)
			}
		}
		if p == "/containers/json" {
			keys := listedBy(r.Query)
			p, ours = p+" by "+keys, strings.Contains(keys, "uid") || strings.Contains(keys, "namespace")
		}
		add("docker "+r.Method+" "+p, r.At, r.Took, ours)
	}
	for _, l := range logs {
		if l.At.Before(c.start) || l.At.After(c.start.Add(c.ready+2*time.Second)) {
			continue
		}
		if l.Sandbox == c.name || l.Fields["agentID"] == c.name+"-"+runID {
			add("log "+logDetail(l), l.At, 0, true)
		} else if l.Fields["controller"] == "sandboxpool" && strings.HasPrefix(l.Msg, "Reconcil") {
			add("log pool pass: "+l.Msg, l.At, 0, false)
		}
	}
	add("watch sees Ready", c.start.Add(c.ready), 0, true)
	slices.SortStableFunc(c.steps, func(a, b step) int { return int(a.at - b.at) })
}

// logDetail is a log line's message up to its first comma (a requeue's delay
// varies), after the engine it is about.
func logDetail(l logLine) string {
	msg, _, _ := strings.Cut(l.Msg, ",")
	if e, ok := l.Fields["engine"].(string); ok {
		return e + ": " + msg
	}
	return msg
}

// printSteps prints each step of the Sandbox's (numbered when repeated: the
// first PATCH of <sb> is #1) with its median start and duration over the claims,
// then the whole timeline of the median claim, the pools' requests included.
func printSteps(t *testing.T, claims []claimSteps) {
	type agg struct {
		at, took []time.Duration
	}
	byStep, order := map[string]*agg{}, []string{}
	for _, c := range claims {
		seen := map[string]int{}
		for _, s := range c.steps {
			if !s.ours {
				continue
			}
			seen[s.what]++
			key := fmt.Sprintf("%s #%d", s.what, seen[s.what])
			if byStep[key] == nil {
				byStep[key] = &agg{}
				order = append(order, key)
			}
			byStep[key].at, byStep[key].took = append(byStep[key].at, s.at), append(byStep[key].took, s.took)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int {
		return int(testenv.Median(byStep[a].at) - testenv.Median(byStep[b].at))
	})
	var lines []string
	for _, k := range order {
		a := byStep[k]
		lines = append(lines, fmt.Sprintf("  +%-7s took %-7s (in %d of %d claims) %s", ms(testenv.Median(a.at)), ms(testenv.Median(a.took)), len(a.at), len(claims), k))
	}
	var ready []time.Duration
	for _, c := range claims {
		ready = append(ready, c.ready)
	}
	logLines(t, fmt.Sprintf("steps of %d claims (median start from create, median duration), create → Ready %s:", len(claims), stats(ready)), lines)
	mid := slices.IndexFunc(claims, func(c claimSteps) bool { return c.ready == testenv.Median(ready) })
	logLines(t, fmt.Sprintf("timeline of the median claim, %s (Ready after %s):", claims[mid].name, ms(claims[mid].ready)), claims[mid].timeline())
	for _, c := range claims {
		if c.ours() != claims[mid].ours() {
			logLines(t, fmt.Sprintf("timeline of %s, with other steps of its own (Ready after %s):", c.name, ms(c.ready)), c.timeline())
		}
	}
}

// ours lists the claim's own steps, without their times or order.
func (c claimSteps) ours() string {
	var out []string
	for _, s := range c.steps {
		if s.ours {
			out = append(out, s.what)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// logLines logs a heading and its lines one by one (make bench keeps only the
// lines that start with the test file's name).
func logLines(t *testing.T, heading string, lines []string) {
	t.Helper()
	t.Log(heading)
	for _, l := range lines {
		t.Log(l)
	}
}

func (c claimSteps) timeline() []string {
	var lines []string
	for _, s := range c.steps {
		who := "  "
		if s.ours {
			who = "sb"
		}
		lines = append(lines, fmt.Sprintf("  %s +%-7s took %-7s %s", who, ms(s.at), ms(s.took), s.what))
	}
	return lines
}

var claimedIn = regexp.MustCompile(`^(\w+): claimed a warm member .* in ([0-9.]+[mµn]?s);`)

// claimedEvents is what the manager's Claimed events say a claim took, by engine.
func claimedEvents(t *testing.T, ns string) string {
	t.Helper()
	out := kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=Claimed", "-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	took := map[string][]time.Duration{}
	for _, line := range strings.Split(out, "\n") {
		if m := claimedIn.FindStringSubmatch(line); m != nil {
			d, _ := time.ParseDuration(m[2])
			took[m[1]] = append(took[m[1]], d)
		}
	}
	var parts []string
	for _, e := range sortedKeys(took) {
		parts = append(parts, fmt.Sprintf("%s %s", e, stats(took[e])))
	}
	return strings.Join(parts, "; ")
}

// warnings lists the namespace's Warning events, "reason: message".
func warnings(t *testing.T, ns string) []string {
	t.Helper()
	out := kubectl(t, "get", "events", "-n", ns, "--field-selector", "type=Warning", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
	if out = strings.TrimSpace(out); out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// perfSched records the scheduler's switches on every CPU (perf sched record)
// around one claim when SANDBOX_BENCH_PERF names a folder: which processes ran,
// and which waited for a CPU, while the claim's requests were slow. The returned
// func stops the recording. A no-op otherwise.
func perfSched(t *testing.T, name string) func(created time.Time) {
	dir := os.Getenv("SANDBOX_BENCH_PERF")
	if dir == "" {
		return func(time.Time) {}
	}
	cmd := exec.Command("perf", "sched", "record", "-a", "-k", "mono", "-o", filepath.Join(dir, name+".data"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("perf sched record: %v", err)
	}
	time.Sleep(time.Second) // perf's own start is over
	return func(created time.Time) {
		var now unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		at := time.Duration(now.Nano()) - time.Since(created)
		t.Logf("%s: created at %.6f on perf's clock (CLOCK_MONOTONIC)", name, at.Seconds())
		time.Sleep(300 * time.Millisecond)
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}
