package sweep

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/lease"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// Kinds of orphans, the values of sandbox_orphans_reaped_total's kind label.
const (
	orphanUID    = "uid"
	orphanLegacy = "legacy"
)

// sweepRequest is the sweep's one synthetic request: every trigger enqueues it, and
// the workqueue folds a burst of triggers into one pass.
var sweepRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "sandbox-sweep"}}

const (
	// sweepDebounce delays a pass triggered by a Docker event, so a teardown's
	// burst of die and destroy events costs one pass.
	sweepDebounce = 500 * time.Millisecond
	// sweepRemovals bounds the removals of one pass running at once.
	sweepRemovals = 8
	// listSlack covers Docker listing creation times in whole seconds: a
	// container is taken to be up to a second younger than listed, so it is never
	// reaped before its grace period.
	listSlack = time.Second
	// sweepBuffer bounds the events waiting for the sweep; past it the sweep is
	// behind (removes nothing) until it catches up.
	sweepBuffer = 1024
)

// Reconciler removes the containers no Sandbox owns any more: those carrying
// the UID of a Sandbox that is gone (its finalizer was removed by force, say), and
// upstream's legacy containers whose owner container is gone. It is a reconcile
// loop of its own on one synthetic request, fed by a jittered ticker, by Docker
// events and by Sandbox deletions; like every controller of the manager, it runs
// only on the elected leader (its ticker and event stream are its sources, started
// with it).
//
// Nothing younger than the grace period and nothing of a live Sandbox is touched;
// a pass that cannot see everything (a list fails, an owner cannot be inspected,
// the event stream is behind) removes nothing.
//
// Note: the UID is the proof, and only this control plane's API server can say a
// UID is gone. Control planes sharing a Docker host must scope their sweeps with
// Options.SweepSelector (or run one sweep): each would reap the others' containers.
type Reconciler struct {
	// APIReader lists Sandboxes from the API server (default: the manager's);
	// Cache reads them as the manager's cache has them (default: its cache).
	APIReader, Cache client.Reader
	Driver           dd.Driver
	Options          options.Options
	// Events is the Docker host's event stream, and identity proves which host it
	// is; both shared with the Sandbox reconciler.
	Events   *eventhub.Shared
	Identity *host.Identity
	// Scope is the DockerHost swept.
	Scope lease.Scope

	stream streamState

	mu sync.Mutex
	// legacyOwners are the owner names of the legacy containers the last pass
	// saw: their die and destroy events trigger a pass.
	legacyOwners map[string]bool
	// ownerMissing is when a legacy container's owner was first seen absent.
	// Note: Docker keeps no time for a container that is gone, so this one lives
	// in memory; a restart can only lengthen the window, never shorten it.
	ownerMissing map[string]time.Time
	// unownedSince is when each claimed pool member nothing owns was first
	// seen so (in memory for the same reason).
	unownedSince map[string]time.Time
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes,verbs=get;list;watch

// Reconcile is one sweep pass.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if !r.Scope.Active() {
		return ctrl.Result{}, nil
	}
	// Note: once proven, the sweep's Docker calls reach that dial of the host only.
	ctx = dd.WithProof(ctx)
	start := time.Now()
	defer func() { sweepMetrics.sweepSeconds.Observe(time.Since(start).Seconds()) }()
	log := logf.FromContext(ctx)

	if why := r.stream.behind(); why != "" {
		return ctrl.Result{}, sweepFailed(ctx, "events", errors.New(why))
	}
	// Note: no sweep of a host not proven. A Sandbox bound to another host is live:
	// nothing of its UID is reaped here, and its containers there are not seen.
	if _, err := r.Identity.Prove(ctx); err != nil {
		return ctrl.Result{}, sweepFailed(ctx, "identity", err)
	}
	// Note: containers are listed before Sandboxes. A UID absent from a later,
	// live list of Sandboxes is gone for good (UIDs are never reused), so a
	// Sandbox created in between cannot be mistaken for a gone one.
	selector := maps.Clone(r.Options.SweepSelector)
	if selector == nil {
		selector = map[string]string{}
	}
	selector[host.LabelSandbox] = host.LabelSandboxTrue
	// Note: one list of every container, judged here: sandbox containers and pool
	// members (which carry no roboco.sandbox label) in one call.
	all, err := r.Driver.List(ctx, nil)
	if err != nil {
		return ctrl.Result{}, sweepFailed(ctx, "list-containers", err)
	}
	containers := withLabels(all, selector)
	live, err := r.liveUIDs(ctx)
	if err != nil && !chaosplant.Active(chaosplant.SweepAfterFailedList) {
		return ctrl.Result{}, sweepFailed(ctx, "list-sandboxes", err)
	}

	p, err := r.plan(ctx, containers, live)
	if err != nil {
		return ctrl.Result{}, sweepFailed(ctx, "inspect-owner", err)
	}
	if err := r.planPools(ctx, &p, all); err != nil {
		return ctrl.Result{}, sweepFailed(ctx, "pools", err)
	}

	// The stream may have broken while we listed.
	if why := r.stream.behind(); why != "" {
		return ctrl.Result{}, sweepFailed(ctx, "events", errors.New(why))
	}
	if err := r.reap(ctx, p.reap); err != nil {
		return ctrl.Result{}, sweepFailed(ctx, "remove", err)
	}
	log.V(1).Info("Sweep done", "containers", len(containers), "sandboxes", len(live),
		"reaped", len(p.reap), "waiting", p.waiting, "elapsed", time.Since(start).Round(time.Millisecond))
	return ctrl.Result{RequeueAfter: p.next}, nil
}

// plan decides which containers are orphans: this instance's whose Sandbox UID is
// not live, and legacy ones whose owner container is gone.
func (r *Reconciler) plan(ctx context.Context, containers []dd.ContainerSummary, live map[types.UID]bool) (sweepPlan, error) {
	p := sweepPlan{now: time.Now(), grace: r.Options.GracePeriod}
	legacy := map[string][]dd.ContainerSummary{}
	for _, c := range containers {
		if uid, ours := c.Labels[host.LabelUID]; ours {
			// Another control plane's UIDs mean nothing to our API server.
			if r.Options.Judges(c.Labels[host.LabelInstance]) && !live[types.UID(uid)] {
				p.consider(c, orphanUID, c.CreatedAt)
			}
			continue
		}
		if owner := c.Labels[host.LabelOwner]; owner != "" {
			legacy[owner] = append(legacy[owner], c)
		}
	}
	for owner, cs := range legacy {
		since, err := r.legacyOwnerGoneSince(ctx, owner, p.now)
		if err != nil {
			return p, err
		}
		if since.IsZero() {
			continue // the owner runs
		}
		for _, c := range cs {
			p.consider(c, orphanLegacy, since)
		}
	}
	r.rememberLegacyOwners(legacy)
	return p, nil
}

// sweepFailed reports a pass that removed nothing (or, for "remove", not all it
// meant to) and hands the error back, for a retry with backoff.
func sweepFailed(ctx context.Context, stage string, err error) error {
	sweepMetrics.sweepErrors.WithLabelValues(stage).Inc()
	logf.FromContext(ctx).Info("Orphan sweep incomplete; retrying with backoff", "stage", stage, "error", err.Error())
	return fmt.Errorf("orphan sweep, %s: %w", stage, err)
}

// reap removes the orphans (stop, kill, remove with volumes), a few at a time, and
// logs each removal.
func (r *Reconciler) reap(ctx context.Context, orphans []orphan) error {
	log := logf.FromContext(ctx)
	errs := make([]error, len(orphans))
	sem := make(chan struct{}, sweepRemovals)
	var wg sync.WaitGroup
	for i, o := range orphans {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := r.Driver.Remove(ctx, o.ID, r.Options.StopTimeout); err != nil {
				errs[i] = fmt.Errorf("removing %s: %w", o.Name, err)
				return
			}
			sweepMetrics.orphansReaped.WithLabelValues(o.kind).Inc()
			log.Info("Reaped orphan container", "kind", o.kind, "container", o.Name, "id", o.ID,
				"labels", o.Labels, "age", o.age.Round(time.Second), "state", o.State)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
