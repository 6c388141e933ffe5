package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
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

// nameBook holds the names passes of this replica took, by Sandbox.
type nameBook struct {
	mu sync.Mutex
	by map[string]types.NamespacedName
}

// take gives names to key unless another Sandbox holds one; it returns that one.
func (b *nameBook) take(key types.NamespacedName, ns []string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]types.NamespacedName{}
	}
	for _, n := range ns {
		if holder, ok := b.by[n]; ok && holder != key {
			return n, false
		}
	}
	for _, n := range ns {
		b.by[n] = key
	}
	return "", true
}

// release gives back every name key holds: its Sandbox is gone.
func (b *nameBook) release(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for n, holder := range b.by {
		if holder == key {
			delete(b.by, n)
		}
	}
}

// reset forgets the book: the host was given up.
func (b *nameBook) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.by)
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
