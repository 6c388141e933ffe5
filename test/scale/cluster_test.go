package scale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// hostName is the DockerHost of fake host i.
func hostName(i int) string { return fmt.Sprintf("fake-%03d", i) }

// registerHosts creates one DockerHost per fake host endpoint, as an operator
// applies them, and waits until every one is Ready.
func registerHosts(t *testing.T, c client.Client, endpoints []string) {
	t.Helper()
	for i, ep := range endpoints {
		h := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: hostName(i)}, Spec: sandboxv1.DockerHostSpec{Endpoint: ep}}
		if err := c.Create(t.Context(), h); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, 5*time.Minute, 500*time.Millisecond, "every DockerHost Ready", func() bool {
		return readyHosts(t, c) == len(endpoints)
	})
}

func readyHosts(t *testing.T, c client.Client) int {
	t.Helper()
	var hosts sandboxv1.DockerHostList
	if err := c.List(t.Context(), &hosts); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range hosts.Items {
		if meta.IsStatusConditionTrue(h.Status.Conditions, sandboxv1.ConditionReady) {
			n++
		}
	}
	return n
}

// hostManagers counts the DockerHosts by the manager their status names as
// driving them ("" when none says).
func hostManagers(t *testing.T, c client.Client) map[string]int {
	t.Helper()
	var hosts sandboxv1.DockerHostList
	if err := c.List(t.Context(), &hosts); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, h := range hosts.Items {
		out[h.Status.Manager]++
	}
	return out
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// sandboxName is the i-th Sandbox of the run.
func sandboxName(i int) string { return fmt.Sprintf("sb-%05d", i) }

// createSandboxes creates Sandboxes from (inclusive) to (exclusive), each one
// redis with no owner container, unplaced: the managers' placement spreads them.
func createSandboxes(t *testing.T, c client.Client, ns string, from, to int) {
	t.Helper()
	const workers = 16
	next := atomic.Int64{}
	next.Store(int64(from))
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
				if err := c.Create(context.Background(), newSandbox(ns, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func newSandbox(ns string, i int) *sandboxv1.Sandbox {
	return &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sandboxName(i)},
		Spec: sandboxv1.SandboxSpec{
			AgentID:  fmt.Sprintf("scale-%05d", i),
			Owner:    &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{{Engine: "redis"}},
		},
	}
}
