package scale

import (
	"context"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

// tracker follows every Sandbox through a watch (an informer): which are Ready,
// where they are placed, and which left Ready since the last mark. Polling lists
// of thousands of Sandboxes would load the API server it measures.
type tracker struct {
	mu    sync.Mutex
	ready map[string]bool   // by namespace/name
	host  map[string]string // spec.dockerHost by namespace/name
	// left are the Sandboxes seen not Ready after being Ready since mark.
	left map[string]bool
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
	tr := &tracker{ready: map[string]bool{}, host: map[string]string{}, left: map[string]bool{}}
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
}

func (tr *tracker) gone(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if sb, ok := obj.(*sandboxv1.Sandbox); ok {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		delete(tr.ready, sb.Namespace+"/"+sb.Name)
		delete(tr.host, sb.Namespace+"/"+sb.Name)
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
