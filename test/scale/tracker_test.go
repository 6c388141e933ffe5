package scale

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

// tracker follows every Sandbox through a watch (an informer): which are Ready,
// where they are placed, which left Ready since the last mark, and which were
// admitted (status.admitted), by namespace. Polling lists of thousands of
// Sandboxes would load the API server it measures.
type tracker struct {
	mu    sync.Mutex
	ready map[string]bool   // by namespace/name
	host  map[string]string // spec.dockerHost by namespace/name
	// left are the Sandboxes seen not Ready after being Ready since mark.
	left map[string]bool
	// reason is the Ready condition's reason by namespace/name.
	reason map[string]string
	// admitted are the Sandboxes whose status records an admission.
	admitted map[string]bool
	// admissions count the admitted Sandboxes by namespace.
	admissions map[string]*admissions
}

// admissions is how many Sandboxes of a namespace record an admission now, the
// most seen at once, and when each count was first reached (every event of the
// watch is looked at, so no peak falls between two samples).
type admissions struct {
	now, most int
	reached   []time.Time // reached[k-1]: when k were first admitted at once
}

// track starts an informer on Sandboxes until the test ends.
func track(t *testing.T, cfg *rest.Config) *tracker {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(t.Context(), &sandboxv1.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracker{ready: map[string]bool{}, host: map[string]string{}, left: map[string]bool{},
		reason: map[string]string{}, admitted: map[string]bool{}, admissions: map[string]*admissions{}}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    tr.saw,
		UpdateFunc: func(_, obj any) { tr.saw(obj) },
		DeleteFunc: tr.gone,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = c.Start(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("the Sandbox informer did not sync")
	}
	return tr
}

func (tr *tracker) saw(obj any) {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok {
		return
	}
	key := sb.Namespace + "/" + sb.Name
	ready := sandboxv1.IsReady(sb)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.ready[key] && !ready {
		tr.left[key] = true
	}
	tr.ready[key] = ready
	tr.host[key] = sb.Spec.DockerHost
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c != nil {
		tr.reason[key] = c.Reason
	}
	// Note: one being deleted no longer counts: its teardown releases its room
	// before it is gone (its containers are sampled on the fake hosts).
	if admitted := sb.Status.Admitted != nil && sb.DeletionTimestamp == nil; admitted != tr.admitted[key] {
		tr.admitted[key] = admitted
		tr.count(sb.Namespace, admitted)
	}
}

// count moves ns's admitted count up or down by one. Callers hold tr.mu.
func (tr *tracker) count(ns string, up bool) {
	a := tr.admissions[ns]
	if a == nil {
		a = &admissions{}
		tr.admissions[ns] = a
	}
	if !up {
		a.now--
		return
	}
	a.now++
	if a.now > a.most {
		a.most = a.now
		a.reached = append(a.reached, time.Now())
	}
}

func (tr *tracker) gone(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sb, ok := obj.(*sandboxv1.Sandbox); ok {
		key := sb.Namespace + "/" + sb.Name
		tr.mu.Lock()
		defer tr.mu.Unlock()
		delete(tr.ready, key)
		delete(tr.host, key)
		delete(tr.reason, key)
		if tr.admitted[key] {
			tr.count(sb.Namespace, false)
		}
		delete(tr.admitted, key)
	}
}

// readyCount is how many Sandboxes are Ready now.
func (tr *tracker) readyCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, r := range tr.ready {
		if r {
			n++
		}
	}
	return n
}

// mark forgets which Sandboxes left Ready so far.
func (tr *tracker) mark() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	clear(tr.left)
}

// leftReady is how many Sandboxes were seen leaving Ready since mark.
func (tr *tracker) leftReady() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.left)
}

// spread is the fewest and the most Sandboxes placed on one of the hosts, and
// how many are not placed yet.
func (tr *tracker) spread(hosts int) (least, most, unplaced int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	per := map[string]int{}
	for _, h := range tr.host {
		if h == "" {
			unplaced++
			continue
		}
		per[h]++
	}
	least = -1
	for i := range hosts {
		n := per[hostName(i)]
		if least < 0 || n < least {
			least = n
		}
		most = max(most, n)
	}
	return least, most, unplaced
}

// inNamespace counts ns's Sandboxes: Ready ones, admitted ones, and those whose
// Ready condition says reason.
func (tr *tracker) inNamespace(ns, reason string) (ready, admitted, withReason int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for key, r := range tr.ready {
		if !strings.HasPrefix(key, ns+"/") {
			continue
		}
		if r {
			ready++
		}
		if tr.admitted[key] {
			admitted++
		}
		if tr.reason[key] == reason {
			withReason++
		}
	}
	return ready, admitted, withReason
}

// admittedNames lists ns's admitted Sandboxes by name.
func (tr *tracker) admittedNames(ns string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for key, a := range tr.admitted {
		if name, ok := strings.CutPrefix(key, ns+"/"); ok && a {
			out = append(out, name)
		}
	}
	return out
}

// admissionsIn is a copy of ns's admission counts.
func (tr *tracker) admissionsIn(ns string) admissions {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	a := tr.admissions[ns]
	if a == nil {
		return admissions{}
	}
	return admissions{now: a.now, most: a.most, reached: append([]time.Time(nil), a.reached...)}
}

// otherReasons lists ns's Sandboxes whose Ready reason is none of reasons, with it.
func (tr *tracker) otherReasons(ns string, reasons ...string) map[string]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]string{}
	for key, reason := range tr.reason {
		if name, ok := strings.CutPrefix(key, ns+"/"); ok && !slices.Contains(reasons, reason) {
			out[name] = reason
		}
	}
	return out
}
