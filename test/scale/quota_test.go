package scale

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// quotaName is the one SandboxQuota of each namespace of the quota benchmark.
const quotaName = "team"

// createQuota makes ns's SandboxQuota, limiting the number of Sandboxes only.
func (r *run) createQuota(ns string, hard int) {
	r.t.Helper()
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: quotaName},
		Spec: sandboxv1.SandboxQuotaSpec{Hard: sandboxv1.QuotaAmounts{Sandboxes: ptr.To(int32(hard))}}}
	if err := r.c.Create(r.t.Context(), q); err != nil {
		r.t.Fatal(err)
	}
}

// setHard raises (or lowers) ns's quota, as an operator edits it.
func (r *run) setHard(ns string, hard int) {
	r.t.Helper()
	q := r.quota(ns)
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.Hard.Sandboxes = ptr.To(int32(hard))
	if err := r.c.Patch(r.t.Context(), q, patch); err != nil {
		r.t.Fatal(err)
	}
}

// quota reads ns's quota from the API server.
func (r *run) quota(ns string) *sandboxv1.SandboxQuota {
	r.t.Helper()
	q := &sandboxv1.SandboxQuota{}
	if err := r.c.Get(r.t.Context(), client.ObjectKey{Namespace: ns, Name: quotaName}, q); err != nil {
		r.t.Fatal(err)
	}
	return q
}

func usedSandboxes(q *sandboxv1.SandboxQuota) int {
	if q.Status.Used.Sandboxes == nil {
		return 0
	}
	return int(*q.Status.Used.Sandboxes)
}

// quotaBytes is the size of ns's quota as the API server serves it (JSON,
// managedFields and all): what every watcher of quotas receives on each change.
func (r *run) quotaBytes(ns string) int {
	r.t.Helper()
	cs, err := kubernetes.NewForConfig(r.rest)
	if err != nil {
		r.t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/apis/sandbox.roboco.io/v1alpha1/namespaces", ns, "sandboxquotas", quotaName).DoRaw(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return len(raw)
}

// quotaAtRest waits until ns's quota counts want Sandboxes and holds no
// admission in flight (the recount dropped every entry its object's status
// records), and returns its size then. A quota still holding entries at the
// deadline is logged and measured as it is: the size check speaks for it.
func (r *run) quotaAtRest(ns string, want int, timeout time.Duration) (bytes, entries int) {
	r.t.Helper()
	var q *sandboxv1.SandboxQuota
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		q = r.quota(ns)
		if usedSandboxes(q) == want && len(q.Status.Admitted) == 0 {
			break
		}
		if time.Now().After(deadline) {
			r.t.Logf("%s's quota not at rest after %s: %q, %d admissions in flight", ns, timeout, q.Status.Summary, len(q.Status.Admitted))
			break
		}
	}
	if got := usedSandboxes(q); got != want {
		r.t.Errorf("%s's quota counts %d Sandboxes used, want %d (%q)", ns, got, want, q.Status.Summary)
	}
	return r.quotaBytes(ns), len(q.Status.Admitted)
}

// live is how many of ns's Sandboxes the fake hosts hold containers of now.
func (f *fakeHosts) live(t *testing.T, ns string) fakedocker.Live {
	t.Helper()
	l, err := f.liveErr(ns)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (f *fakeHosts) liveErr(ns string) (fakedocker.Live, error) {
	var l fakedocker.Live
	body, err := get("http://" + f.stats + "/live?namespace=" + ns)
	if err == nil {
		err = json.Unmarshal([]byte(body), &l)
	}
	return l, err
}

// peaks are the most of a namespace's Sandboxes seen at once: with live
// containers on the fake hosts, and counted used by its quota; when the fake
// hosts first held target of them; and how many samples were taken or failed.
type peaks struct {
	sandboxes, containers, used, samples, failed int
	target                                       int
	reached                                      time.Time
}

// sampler samples peaks every 100 ms until stopped.
type sampler struct {
	mu   sync.Mutex
	p    peaks
	done chan struct{}
	wg   sync.WaitGroup
}

// samplePeaks samples how many of ns's Sandboxes the fake hosts hold
// containers of and how many its quota counts used.
func (r *run) samplePeaks(ns string, target int) *sampler {
	s := &sampler{p: peaks{target: target}, done: make(chan struct{})}
	s.wg.Go(func() {
		for {
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			// Note: no t.Fatal off the test's goroutine: a failed sample is counted.
			l, err := r.fake.liveErr(ns)
			q := &sandboxv1.SandboxQuota{}
			if err == nil {
				err = r.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: quotaName}, q)
			}
			s.add(l, q, err)
		}
	})
	return s
}

func (s *sampler) add(l fakedocker.Live, q *sandboxv1.SandboxQuota, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.p.failed++
		return
	}
	p := &s.p
	p.sandboxes, p.containers, p.used = max(p.sandboxes, l.Sandboxes), max(p.containers, l.Containers), max(p.used, usedSandboxes(q))
	if p.reached.IsZero() && l.Sandboxes >= p.target {
		p.reached = time.Now()
	}
	p.samples++
}

// peaks is what was sampled so far.
func (s *sampler) peaks() peaks {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// stop ends the sampling and returns what it saw.
func (s *sampler) stop() peaks {
	close(s.done)
	s.wg.Wait()
	return s.peaks()
}
