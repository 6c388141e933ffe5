package sandbox_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// probeWaits records, for one Sandbox with one service, the requeue each pass that
// ran a failed probe asked for. Its clock is those waits, not the machine's: the
// service answers once the reconciler has asked to wait answersAfter in all (0:
// never), whatever the passes themselves took.
type probeWaits struct {
	host         *ct.EngineSim
	name         string
	answersAfter time.Duration
	fail         func() // clear undoes the failing probe

	mu       sync.Mutex
	execs    int
	waits    []time.Duration
	waited   time.Duration
	answered bool
}

// failProbesOf makes the probes of container fail until the Sandbox name has
// waited answersAfter.
func failProbesOf(host *ct.EngineSim, name, container string, answersAfter time.Duration) *probeWaits {
	clear := host.OnExec(fake.ExecRule{Container: container,
		Result: dd.ExecResult{ExitCode: 2, Stderr: "psql: error: connection refused"}})
	DeferCleanup(clear)
	return &probeWaits{host: host, name: name, answersAfter: answersAfter, fail: clear}
}

func (p *probeWaits) observe(req ctrl.Request, result ctrl.Result, err error) {
	if req.Name != p.name {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	execs := p.host.Calls(fake.VerbExec)
	probed := execs > p.execs
	p.execs = execs
	if !probed || p.answered || err != nil {
		return
	}
	p.waits = append(p.waits, result.RequeueAfter)
	p.waited += result.RequeueAfter
	if p.answersAfter > 0 && p.waited >= p.answersAfter {
		p.fail()
		p.answered = true
	}
}

func (p *probeWaits) recorded() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.waits...)
}

// probesInAMinute counts the probes of a service's first minute if the waits go
// on as recorded, the last repeating.
func probesInAMinute(waits []time.Duration) int {
	n, at := 1, time.Duration(0)
	for i := 0; ; i++ {
		at += waits[min(i, len(waits)-1)]
		if at >= time.Minute {
			return n
		}
		n++
	}
}

// Probe pacing: a service is noticed soon after it answers, and one that does not
// answer is not stormed with execs. Judged on the probes and the waits the
// reconciler asks for, never on how long anything took.
var _ = Describe("Probe pacing", func() {
	var (
		host *ct.EngineSim
		ns   string
	)
	BeforeEach(func() {
		host = ct.NewHost()
		ns = ct.NewNamespace()
	})
	start := func(opts ct.Options, p *probeWaits) {
		ct.StartManagerWith(env.Config, host, ct.Setup{Options: opts, Sweep: true,
			HostIdentitySettle: time.Millisecond, ObservePass: p.observe})
	}

	It("notices a service a fraction of its start-up after it answers: quick probes first", func() {
		// Postgres answers 1.3s into its probes. A fixed 1s between probes noticed it
		// at 2s; every wait is at most 50ms plus a quarter of the time waited so far.
		const answersAfter = 1300 * time.Millisecond
		p := failProbesOf(host, "quick", "roboco-sandbox-pg-quick-1", answersAfter)
		start(ct.TestOptions(), p)
		sb := ct.NewSandbox(ns, "quick", "quick-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)

		waits := p.recorded()
		var waited, prev time.Duration
		for i, w := range waits {
			Expect(w).To(BeNumerically("<=", 50*time.Millisecond+waited/4), "wait %d of %v, after %s", i, waits, waited)
			Expect(w).To(BeNumerically(">=", prev), "waits never shorten: %v", waits)
			waited, prev = waited+w, w
		}
		Expect(waited-answersAfter).To(BeNumerically("<=", 50*time.Millisecond+answersAfter/4), "noticed late: %v", waits)
		Expect(len(waits)).To(BeNumerically("<=", 15), "too many probes (a 100ms poll would make 13): %v", waits)
	})

	It("slows its probes of a service that never answers to one a second, soon", func() {
		opts := ct.TestOptions()
		opts.ProbeDeadlines = map[string]time.Duration{"postgres": time.Minute}
		p := failProbesOf(host, "silent", "roboco-sandbox-pg-silent-1", 0)
		start(opts, p)
		sb := ct.NewSandbox(ns, "silent", "silent-1", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		atOneSecond := func() int {
			n := 0
			for _, w := range p.recorded() {
				if w >= time.Second {
					n++
				}
			}
			return n
		}
		Eventually(atOneSecond, 30*time.Second).Should(BeNumerically(">=", 3))

		waits := p.recorded()
		for i := 1; i < len(waits); i++ {
			Expect(waits[i]).To(BeNumerically(">=", waits[i-1]), "waits never shorten: %v", waits)
		}
		Expect(waits[len(waits)-1]).To(Equal(time.Second), "the slowest pace is 1s until the deadline: %v", waits)
		Expect(probesInAMinute(waits)).To(BeNumerically("<=", 80), "probes in the first minute at the pace of %v", waits)
	})
})
