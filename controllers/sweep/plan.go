package sweep

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// sweepPlan collects what a pass removes and when the next container comes of age.
type sweepPlan struct {
	now     time.Time
	grace   time.Duration
	reap    []orphan
	waiting int
	next    time.Duration
}

type orphan struct {
	dd.ContainerSummary
	kind string
	age  time.Duration
}

// consider plans to remove c once it is older than the grace period and, since
// missingSince, its owner (or Sandbox) has been gone that long.
func (p *sweepPlan) consider(c dd.ContainerSummary, kind string, missingSince time.Time) {
	created := c.CreatedAt.Add(listSlack)
	deadline := created.Add(p.grace)
	if d := missingSince.Add(p.grace); d.After(deadline) {
		deadline = d
	}
	if left := deadline.Sub(p.now); left > 0 {
		p.waiting++
		p.next = kit.Soonest(p.next, left)
		return
	}
	p.reap = append(p.reap, orphan{ContainerSummary: c, kind: kind, age: p.now.Sub(c.CreatedAt)})
}

// liveUIDs lists the UIDs of the Sandboxes that exist, live from the API server.
//
// Note: not from the informer cache. Right after a leader change, or while its
// watch lags, a cache can miss a Sandbox that exists, and its containers would be
// reaped; one metadata-only list per pass is cheap, and the grace period makes
// a Sandbox created after it irrelevant.
func (r *Reconciler) liveUIDs(ctx context.Context) (map[types.UID]bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(sandboxv1.GroupVersion.WithKind("SandboxList"))
	if err := r.APIReader.List(ctx, list); err != nil {
		return nil, err
	}
	live := make(map[types.UID]bool, len(list.Items))
	for _, item := range list.Items {
		live[item.UID] = true
	}
	return live, nil
}
