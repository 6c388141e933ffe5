package controllertest

import (
	"sync"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Pass is one pass a manager made: when it ended, what it asked for
// (Setup.ObservePass) and what Read said of the Sandbox right after it.
type Pass struct {
	At     time.Time
	Result ctrl.Result
	Err    error
	Read   string
}

// Passes records a manager's passes of one object, so that a spec judges which
// pass changed its status, and whether a look it asked for was due then, by the
// passes rather than by how long the machine took.
type Passes struct {
	key  types.NamespacedName
	read func() string
	mu   sync.Mutex
	list []Pass
}

// NewPasses records no pass until Follow names the Sandbox.
func NewPasses() *Passes { return &Passes{} }

// Follow records the passes of obj (a Sandbox, or a pool's with
// Setup.ObservePoolPass) from now on; read (e.g. Condition(sb, ...)) is read
// after each.
func (p *Passes) Follow(obj client.Object, read func() string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.key, p.read = client.ObjectKeyFromObject(obj), read
}

// Observe is a Setup.ObservePass.
func (p *Passes) Observe(req ctrl.Request, result ctrl.Result, err error) {
	p.mu.Lock()
	key, read := p.key, p.read
	p.mu.Unlock()
	if read == nil || req.NamespacedName != key {
		return
	}
	pass := Pass{At: time.Now(), Result: result, Err: err, Read: read()}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, pass)
}

// All is every pass so far.
func (p *Passes) All() []Pass {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Pass(nil), p.list...)
}

// Count is how many passes ran so far.
func (p *Passes) Count() int { return len(p.All()) }

// StartManagerObserved is StartManager whose Sandbox passes passes records.
func StartManagerObserved(driver dd.Driver, opts Options, passes *Passes) (stop func()) {
	return StartManagerWith(env.Config, driver, Setup{Options: opts, Sweep: true, HostIdentitySettle: time.Millisecond,
		ObservePass: passes.Observe})
}

// ByEvent runs cause, waits by the suites' deadline (one that holds at a load of
// 10) until the passes' Read says want, and judges that a pass a Docker event
// brought made it so, not a requeue: a pass ended after cause, before the look
// the last pass before cause asked for was due, and Read said want right after
// it. A requeue cannot come before it is due; the time the machine took plays no
// part.
func (p *Passes) ByEvent(cause func(), want string) {
	before := p.All()
	due := dueAfter(before)
	cause()
	gomega.EventuallyWithOffset(1, func() []string {
		var reads []string
		for _, pass := range p.All()[len(before):] {
			reads = append(reads, pass.Read)
		}
		return reads
	}).Should(gomega.ContainElement(want), "no pass after the event read %q", want)
	for _, pass := range p.All()[len(before):] {
		if pass.Read == want {
			gomega.ExpectWithOffset(1, pass.At).To(gomega.BeTemporally("<", due), "the first pass that read %q was the requeue the pass before asked for, not the event's", want)
			return
		}
	}
}

// dueAfter is when the look the last of passes asked for is due: a failed pass
// is retried with a backoff the spec does not know, so at once; no pass, or one
// that asked for none, never.
func dueAfter(passes []Pass) time.Time {
	never := time.Now().Add(24 * time.Hour)
	if len(passes) == 0 {
		return never
	}
	last := passes[len(passes)-1]
	switch {
	case last.Err != nil:
		return last.At
	case last.Result.RequeueAfter > 0:
		return last.At.Add(last.Result.RequeueAfter)
	}
	return never
}
