package sandbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/claim"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/index"
)

// One name, one container: every name a service answers to on a Docker host's
// networks (its container name, and the 63-character alias of a longer one) is
// one Sandbox's. Docker keeps container names unique, but not aliases, and an
// alias has the shape of a container name (roboco-sandbox-redis-<33
// characters>-<8 hex> is also the container name of the agentID
// "<33 characters>-<8 hex>"): Docker's DNS would answer both containers, and
// one Sandbox's agent would reach another's database. So before a service's
// container is made (or a member claimed), its names are checked against the
// host's other Sandboxes, and taken in this replica's book (one replica drives
// a host, so two passes cannot both take a name).

// published are the names sb's services answer to now (a container made).
func published(sb *sandboxv1.Sandbox) []string {
	var out []string
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			out = append(out, s.ContainerName, s.Host)
		}
	}
	return out
}

// nameHeld says why a service of sb may not take its names on this host, or "".
// Another Sandbox holds a name when it published it (its status names it), took
// it in this replica's book, or, neither having published it, was created first.
func (r *Reconciler) nameHeld(ctx context.Context, sb *sandboxv1.Sandbox, e engine.Engine) (string, error) {
	mine := engine.ServiceNames(e, sb.Spec.AgentID)
	if own := published(sb); slices.Contains(own, mine[0]) {
		return "", nil // it serves these names already
	}
	for _, n := range mine {
		var list sandboxv1.SandboxList
		if err := r.List(ctx, &list, client.MatchingFields{index.PublishedName: index.OnHost(r.Scope.Name, n)}); err != nil {
			return "", err
		}
		for i := range list.Items {
			other := &list.Items[i]
			if other.UID == sb.UID || !holds(other, sb, n) {
				continue
			}
			return heldBy(sb, other, n), nil
		}
	}
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name}
	if n, ok := r.names.take(key, mine); !ok {
		return fmt.Sprintf("the name %s is being taken by another Sandbox on this Docker host: a name is one Sandbox's per Docker host; use another agentID", n), nil
	}
	return "", nil
}

// holds says whether other, which names n too, holds it before sb.
func holds(other, sb *sandboxv1.Sandbox, n string) bool {
	if slices.Contains(published(other), n) {
		return true
	}
	if c := other.CreationTimestamp.Compare(sb.CreationTimestamp.Time); c != 0 {
		return c < 0
	}
	return other.UID < sb.UID
}

// sharingNames maps a deleted Sandbox to the Sandboxes of its host waiting for
// one of its names.
func (r *Reconciler) sharingNames(ctx context.Context, obj client.Object) []reconcile.Request {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok || sb.Spec.DockerHost != r.Scope.Name {
		return nil
	}
	r.names.release(types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
	var out []reconcile.Request
	for _, svc := range sb.Spec.Services {
		e, ok := engine.Lookup(string(svc.Engine))
		if !ok {
			continue
		}
		for _, n := range engine.ServiceNames(e, sb.Spec.AgentID) {
			var list sandboxv1.SandboxList
			if err := r.List(ctx, &list, client.MatchingFields{index.PublishedName: index.OnHost(r.Scope.Name, n)}); err != nil {
				continue
			}
			for i := range list.Items {
				if list.Items[i].UID != sb.UID {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
				}
			}
		}
	}
	return out
}

// staleRetry is how soon a service is looked at again after its name was freed.
const staleRetry = 10 * time.Millisecond

// nameConflict decides about a container that holds the service's name without our
// UID: stale (its Sandbox is gone) → removed; otherwise never touched.
func (r *Reconciler) nameConflict(ctx context.Context, sb *sandboxv1.Sandbox, res serviceResult, conflict *dd.ConflictError) serviceResult {
	existing := conflict.Existing
	key, named := sandboxKey(existing.Labels)
	uid := existing.Labels[host.LabelUID]
	if instance := existing.Labels[host.LabelInstance]; named && uid != "" && !r.Options.Judges(instance) {
		return res.conflict(fmt.Sprintf(
			"container name %s is taken by container %s of another control plane (instance %q, this one is %q); it is never touched: use another agentID "+
				"(or, if %q was this control plane's earlier name, list it in --legacy-instances)",
			conflict.Name, dd.ShortID(existing.ID), instance, r.Options.Instance, instance))
	}
	if existing.Labels[host.LabelPoolUID] != "" {
		return r.claimedConflict(ctx, sb, res, conflict)
	}
	if !named || uid == "" {
		return res.conflict(fmt.Sprintf(
			"container name %s is taken by container %s, which carries no Sandbox UID label (a foreign or legacy container); it is never touched: remove it, or let the orphan sweep reap it",
			conflict.Name, dd.ShortID(existing.ID)))
	}
	// Note: read from the API server, not the cache: a Sandbox created a moment ago
	// must never look gone.
	other := &sandboxv1.Sandbox{}
	err := r.APIReader.Get(ctx, key, other)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		retryIn := retryLater(ctx)
		res.containers = part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("checking who owns %s: %v; retrying in %s",
			conflict.Name, err, retryIn.Round(time.Second))}
		return res
	case err == nil && string(other.UID) == uid:
		return res.conflict(heldBy(sb, other, conflict.Name))
	}
	if err := r.Host.Remove(ctx, existing.ID); err != nil {
		return res.dockerFailed(ctx, err, "removing stale container "+conflict.Name)
	}
	res.event(sandboxv1.EventStaleRemoved, fmt.Sprintf(
		"removed stale container %s left by Sandbox %s/%s (uid %s), which no longer exists", conflict.Name, key.Namespace, key.Name, uid))
	return res.waiting(part{reason: sandboxv1.ReasonCreating, message: "removed a stale container holding " + conflict.Name},
		"waiting for the container", staleRetry)
}

// heldBy says that another live Sandbox holds name. agentIDs are unique per
// Docker host, not per namespace (container names are upstream's, and carry no
// namespace): one of another namespace is not named, since a tenant learns
// nothing of another's objects from a condition.
func heldBy(sb, other *sandboxv1.Sandbox, name string) string {
	const why = "a name (container name, or the alias of a longer one) is one Sandbox's per Docker host, across namespaces: " +
		"a second container answering to it would take the other's connections; use another agentID"
	if other.Namespace == sb.Namespace {
		return fmt.Sprintf("the name %s belongs to Sandbox %s (agentID %s) on this Docker host: %s", name, other.Name, other.Spec.AgentID, why)
	}
	return fmt.Sprintf("the name %s belongs to a Sandbox of another namespace on this Docker host: %s", name, why)
}

// conflict stalls the service on a name it may not take.
func (res serviceResult) conflict(message string) serviceResult {
	res.containers = part{reason: sandboxv1.ReasonNameConflict, message: message}
	return res.stall()
}

// claimedConflict decides about a claimed pool member that holds the service's
// name. It carries its pool's labels, never its Sandbox's UID (labels cannot
// change); what makes it a Sandbox's is that Sandbox's record (status.claims,
// written before the rename), or, that lost, its answer to the password of
// the Sandbox's own Secret (recover). One a live Sandbox records serves it and
// is never touched. One no live Sandbox records holds the data of an agent that
// no longer has it (its Sandbox gone, or its status lost before any Secret
// held its password): it is never served to another Sandbox; the orphan sweep
// removes it once the grace period has passed, and its destroy re-queues this
// Sandbox (watch).
func (r *Reconciler) claimedConflict(ctx context.Context, sb *sandboxv1.Sandbox, res serviceResult, conflict *dd.ConflictError) serviceResult {
	existing := conflict.Existing
	recorded, err := r.recordedLive(ctx, existing.Labels[host.LabelNamespace], existing.ID)
	switch {
	case err != nil:
		retryIn := retryLater(ctx)
		res.containers = part{reason: sandboxv1.ReasonCreating, message: fmt.Sprintf("checking which Sandbox claimed %s: %v; retrying in %s",
			conflict.Name, err, retryIn.Round(time.Second))}
		return res
	case !recorded:
		return res.conflict(fmt.Sprintf(
			"container name %s is taken by container %s, a claimed warm pool member that no live Sandbox records (its Sandbox is gone, or lost its status before its Secret was made), "+
				"which may hold that agent's data: it is never served to another Sandbox; the orphan sweep removes it once the grace period has passed, and this service then starts",
			conflict.Name, dd.ShortID(existing.ID)))
	}
	return res.conflict(fmt.Sprintf(
		"container name %s is taken by container %s, a claimed warm pool member that serves a Sandbox with this agentID on this Docker host and holds its data; it is never touched: use another agentID",
		conflict.Name, dd.ShortID(existing.ID)))
}

// recordedLive says whether a Sandbox of namespace ns records the claim of
// container id, live from the API server: a claim recorded a moment ago must
// never look unrecorded.
func (r *Reconciler) recordedLive(ctx context.Context, ns, id string) (bool, error) {
	var list sandboxv1.SandboxList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return false, err
	}
	for i := range list.Items {
		for _, rec := range claim.Records(&list.Items[i]) {
			if rec.ID == id {
				return true, nil
			}
		}
	}
	return false, nil
}
