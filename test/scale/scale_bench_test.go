package scale

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// settings are the benchmark's knobs, from the environment.
type settings struct {
	steps    []int // Sandboxes in total after each step
	hosts    int
	managers []int
	window   time.Duration
	signal   syscall.Signal // what stops the managers for the restart
	sigName  string
}

// benchSettings reads SCALE_SANDBOXES (the last step, default 5000: steps of
// 1,000, 2,000 and 5,000 up to it), SCALE_HOSTS (50), SCALE_MANAGERS (the runs'
// replica counts, "1,3"), SCALE_WINDOW (the idle window, 60s) and
// SCALE_RESTART_SIGNAL (TERM, or KILL).
func benchSettings(t *testing.T) settings {
	t.Helper()
	s := settings{hosts: envInt(t, "SCALE_HOSTS", 50), window: time.Minute, signal: syscall.SIGTERM}
	last := envInt(t, "SCALE_SANDBOXES", 5000)
	for _, n := range []int{1000, 2000, 5000} {
		if n < last {
			s.steps = append(s.steps, n)
		}
	}
	s.steps = append(s.steps, last)
	for _, f := range strings.Split(envOr("SCALE_MANAGERS", "1,3"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("SCALE_MANAGERS=%q: want replica counts such as 1,3", os.Getenv("SCALE_MANAGERS"))
		}
		s.managers = append(s.managers, n)
	}
	if w := os.Getenv("SCALE_WINDOW"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d <= 0 {
			t.Fatalf("SCALE_WINDOW=%q: want a duration such as 60s", w)
		}
		s.window = d
	}
	switch s.sigName = envOr("SCALE_RESTART_SIGNAL", "TERM"); s.sigName {
	case "TERM":
	case "KILL":
		s.signal = syscall.SIGKILL
	default:
		t.Fatalf("SCALE_RESTART_SIGNAL=%q: want TERM or KILL", os.Getenv("SCALE_RESTART_SIGNAL"))
	}
	return s
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	n, err := strconv.Atoi(envOr(key, strconv.Itoa(def)))
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", key, os.Getenv(key))
	}
	return n
}

// step is one row of the growth curve.
type step struct {
	managers, sandboxes int
	toReady             time.Duration // from the step's first create until all are Ready
	idle
}

// restart is how a fleet came back after all its managers were stopped at once.
type restart struct {
	managers, sandboxes int
	stopped             time.Duration // from the signal until every manager exited
	converged           time.Duration // from the new managers' start until every Sandbox was looked at and Ready
	leftReady           int           // Sandboxes seen leaving Ready meanwhile
	creates             int64         // containers created meanwhile
}

// TestBenchScale grows a fleet of 50 fake hosts to 1,000, 2,000 and 5,000
// redis Sandboxes, driven by one manager and then, on a fresh control plane, by
// three; at each step it measures the time until all are Ready and the fleet at
// rest (API and Docker requests, CPU, memory); at the end it stops every manager
// at once, starts them again and measures the time until every Sandbox has been
// looked at again and is Ready. A duplicate create fails it.
func TestBenchScale(t *testing.T) {
	testenv.BenchOnly(t)
	cfg := benchSettings(t)
	var steps []step
	var restarts []restart
	for _, n := range cfg.managers {
		t.Run(fmt.Sprintf("managers=%d", n), func(t *testing.T) {
			r := newRun(t, cfg, n)
			base := step{managers: n, idle: r.idle()}
			t.Logf("%d manager(s), %d hosts, no Sandbox: %s", n, cfg.hosts, base.idle)
			steps = append(steps, base)
			for _, target := range cfg.steps {
				steps = append(steps, r.grow(target))
			}
			restarts = append(restarts, r.restart())
			t.Logf("DockerHosts by status.manager: %v", hostManagers(t, r.c))
		})
	}
	logTable(t, cfg, steps, restarts)
}

// grow creates Sandboxes up to target and measures the step.
func (r *run) grow(target int) step {
	r.t.Helper()
	start := time.Now()
	createSandboxes(r.t, r.c, namespace, r.created, target)
	created := time.Since(start)
	r.created = target
	r.waitReady(target, time.Duration(target)*time.Second)
	s := step{managers: len(r.ms.all), sandboxes: target, toReady: time.Since(start)}
	r.noDuplicates(fmt.Sprintf("%d Sandboxes", target))
	time.Sleep(10 * time.Second) // the tail of the burst: allocation recounts, events
	s.idle = r.idle()
	least, most, _ := r.tr.spread(r.cfg.hosts)
	r.t.Logf("%d Sandboxes: created in %s, all Ready after %s, %d..%d per host; at rest: %s", target,
		created.Round(time.Millisecond), s.toReady.Round(time.Millisecond), least, most, s.idle)
	scrapes := r.ms.scrape()
	r.t.Logf("  so far: %s; %s; %s; load average %s", passes(scrapes, "sandbox-placement"), passes(scrapes, "sandbox"),
		passes(scrapes, "dockerhost"), loadAvg())
	return s
}

// restart stops every manager at once, starts as many again, and waits until
// the fake hosts saw every Sandbox's containers looked at by the new managers
// and every Sandbox is Ready (see fakedocker.Observed).
func (r *run) restart() restart {
	r.t.Helper()
	n := len(r.ms.all)
	out := restart{managers: n, sandboxes: r.created}
	before := r.fake.fakeStats(r.t)
	r.tr.mark()
	at := time.Now()
	r.ms.stop(r.cfg.signal)
	out.stopped = time.Since(at)
	at = time.Now()
	r.ms.start(n)
	deadline := at.Add(time.Duration(r.created) * time.Second)
	var marks []string // when a quarter more were looked at
	for {
		o := r.fake.observed(r.t, at)
		for len(marks) < 4 && o.Observed >= (len(marks)+1)*r.created/4 {
			marks = append(marks, time.Since(at).Round(100*time.Millisecond).String())
		}
		if o.Observed >= r.created && r.tr.readyCount() >= r.created {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("restart: after %s, %d of %d service containers looked at, %d Sandboxes Ready",
				time.Since(at).Round(time.Second), o.Observed, o.Containers, r.tr.readyCount())
		}
		time.Sleep(200 * time.Millisecond)
	}
	out.converged = time.Since(at)
	out.leftReady = r.tr.leftReady()
	after := r.fake.fakeStats(r.t)
	out.creates = after.Creates - before.Creates
	secs := out.converged.Seconds()
	// The new managers' counters start at zero: all of theirs is the restart's.
	scrapes := r.ms.scrape()
	api := perEndpoint(nil, intCounts(byLabel(scrapes, "rest_client_requests_total", "method")), secs)
	r.t.Logf("  meanwhile, per second: API %s; Docker %s; %s; the managers used %.0f%% CPU; load average %s", api,
		perEndpoint(before.Requests, after.Requests, secs), passes(scrapes, "sandbox"), 100*r.ms.cpuSeconds()/secs, loadAvg())
	r.noDuplicates("after the restart")
	r.t.Logf("restart of %d manager(s) (SIG%s): stopped in %s; converged %s after the start (a quarter, half, three quarters, all looked at after %s); %d Sandboxes left Ready meanwhile, %d containers created",
		n, r.cfg.sigName, out.stopped.Round(time.Millisecond), out.converged.Round(time.Millisecond), strings.Join(marks, ", "), out.leftReady, out.creates)
	return out
}

// logTable logs the growth curve and the restarts.
func logTable(t *testing.T, cfg settings, steps []step, restarts []restart) {
	t.Logf("fleet of %d fake hosts, redis Sandboxes, at rest over %s:", cfg.hosts, cfg.window)
	t.Logf("| managers | Sandboxes | create → all Ready | RSS MiB (each) | MiB per 1,000 (above none) | heap MiB | API req/s | Docker req/s | CPU %% |")
	t.Logf("|---|---|---|---|---|---|---|---|---|")
	for _, s := range steps {
		base := steps[slices.IndexFunc(steps, func(b step) bool { return b.managers == s.managers && b.sandboxes == 0 })]
		per, toReady := "", "–"
		if s.sandboxes > 0 {
			k := float64(s.sandboxes) / 1000
			per = fmt.Sprintf("%.1f (%.1f)", s.rssTotal/k, (s.rssTotal-base.rssTotal)/k)
			toReady = s.toReady.Round(100 * time.Millisecond).String()
		}
		t.Logf("| %d | %d | %s | %.0f %v | %s | %.0f | %.1f | %.1f | %.1f |", s.managers, s.sandboxes, toReady,
			s.rssTotal, rounded(s.rssEach), per, s.heapMiB, s.apiPerSec, s.dockerPerSec, s.cpuPercent)
	}
	t.Logf("| managers | Sandboxes | stop (SIG%s) | start → all looked at and Ready | left Ready | containers created |", cfg.sigName)
	t.Logf("|---|---|---|---|---|---|")
	for _, r := range restarts {
		t.Logf("| %d | %d | %s | %s | %d | %d |", r.managers, r.sandboxes, r.stopped.Round(time.Millisecond),
			r.converged.Round(100*time.Millisecond), r.leftReady, r.creates)
	}
}
