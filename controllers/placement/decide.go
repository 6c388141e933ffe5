package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
)

// ownerLookupTimeout bounds the look for an owner container on each host.
const ownerLookupTimeout = 2 * time.Second

// placeable is a Sandbox or SandboxPool waiting for a host.
type placeable struct {
	capacity.Request
	selector *metav1.LabelSelector
	// owner is the owner container to place beside ("" for none); legacyID is the
	// identity an earlier release bound the object to (status.dockerHost).
	owner    string
	legacyID string
	// policy is what the operator's SandboxPolicies allow its namespace.
	policy policy.Effective
}

// decision is a host, or why none.
type decision struct {
	host string
	why  string
}

// decide picks the DockerHost for p among hosts: the one an earlier release bound
// it to; else beside its owner container when exactly one host runs it; else a
// host its selector admits, not cordoned, with capacity left, Ready first, least
// loaded first. An owner found on several hosts is ambiguous: the user says
// which (spec.dockerHost). An owner found nowhere is placed by the rest.
func (pl *Reconciler) decide(ctx context.Context, p placeable, hosts []sandboxv1.DockerHost) decision {
	if p.legacyID != "" {
		for _, h := range hosts {
			if h.Status.Identity != nil && h.Status.Identity.ID == p.legacyID {
				return decision{host: h.Name}
			}
		}
		return decision{why: fmt.Sprintf("an earlier release bound it to Docker host %s, which no DockerHost has proven to be yet", p.legacyID)}
	}
	sel, err := selectorOf(p.selector)
	if err != nil {
		return decision{why: fmt.Sprintf("dockerHostSelector: %v", err)}
	}
	if p.owner != "" {
		if d, found := pl.besideOwner(ctx, p, sel, hosts); found {
			return d
		}
	}
	return pickHost(p, sel, hosts)
}

func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// besideOwner looks for the owner container on every DockerHost; found is false
// when none runs it. The look must be complete: a host that has not answered
// (not dialled yet, or an error other than not-found) could run it, so the
// object waits, unless that host is known to be down (Ready False), whose
// owners cannot be seen until it returns.
func (pl *Reconciler) besideOwner(ctx context.Context, p placeable, sel labels.Selector, hosts []sandboxv1.DockerHost) (decision, bool) {
	on, unanswered := pl.lookOwner(ctx, p.owner, hosts)
	switch {
	case len(on) > 1:
		return decision{why: fmt.Sprintf("its owner container %s runs on Docker hosts %s: set spec.dockerHost to the one meant", p.owner, strings.Join(on, " and "))}, true
	case len(unanswered) > 0:
		// Note: even when one host runs it, a host that has not answered may too.
		return decision{why: fmt.Sprintf("looking for its owner container %s: Docker host %s has not answered yet", p.owner, strings.Join(unanswered, ", "))}, true
	case len(on) == 0:
		return decision{}, false
	}
	for _, h := range hosts {
		if h.Name == on[0] {
			if why := unfit(p, sel, h); why != "" {
				return decision{why: fmt.Sprintf("its owner container %s runs on Docker host %s, which %s", p.owner, h.Name, why)}, true
			}
		}
	}
	return decision{host: on[0]}, true
}

// lookOwner asks every DockerHost, at once, whether it runs the container name.
func (pl *Reconciler) lookOwner(ctx context.Context, name string, hosts []sandboxv1.DockerHost) (on, unanswered []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range hosts {
		raw, ok := pl.Drivers.Raw(h.Name)
		if !ok {
			if !hostDown(h) {
				unanswered = append(unanswered, h.Name)
			}
			continue
		}
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, ownerLookupTimeout)
			defer cancel()
			_, err := raw.Inspect(lctx, name)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				on = append(on, h.Name)
			case !errors.Is(err, dd.ErrNotFound) && !hostDown(h):
				unanswered = append(unanswered, h.Name)
			}
		})
	}
	wg.Wait()
	slices.Sort(on)
	slices.Sort(unanswered)
	return on, unanswered
}

// hostDown: the host's last observation says its daemon does not answer.
func hostDown(h sandboxv1.DockerHost) bool {
	return meta.IsStatusConditionFalse(h.Status.Conditions, sandboxv1.ConditionReady)
}

// pickHost is the least loaded fitting host, Ready ones first.
func pickHost(p placeable, sel labels.Selector, hosts []sandboxv1.DockerHost) decision {
	var fit []sandboxv1.DockerHost
	whys := map[string]int{}
	for _, h := range hosts {
		if why := unfit(p, sel, h); why != "" {
			whys[why]++
			continue
		}
		fit = append(fit, h)
	}
	if len(fit) == 0 {
		return decision{why: noFitMessage(len(hosts), whys)}
	}
	sort.SliceStable(fit, func(i, j int) bool {
		ri, rj := hostReady(fit[i]), hostReady(fit[j])
		if ri != rj {
			return ri
		}
		if li, lj := load(fit[i]), load(fit[j]); li != lj {
			return li < lj
		}
		return fit[i].Name < fit[j].Name
	})
	return decision{host: fit[0].Name}
}

// unfit says why h cannot take p ("" when it can).
func unfit(p placeable, sel labels.Selector, h sandboxv1.DockerHost) string {
	switch {
	case !h.DeletionTimestamp.IsZero():
		return "is being deleted"
	case !sel.Matches(labels.Set(h.Labels)):
		return "dockerHostSelector does not admit"
	case p.policy.HostAllowed(&h) != "":
		return "the namespace's SandboxPolicy does not allow"
	case h.Spec.Unschedulable:
		return "is cordoned"
	case !capacity.Fits(h, p.Need):
		return "has no capacity left"
	}
	return ""
}

func noFitMessage(total int, whys map[string]int) string {
	if total == 0 {
		return "no DockerHost exists: register one (kubectl apply a DockerHost)"
	}
	parts := make([]string, 0, len(whys))
	for why, n := range whys {
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	slices.Sort(parts)
	return fmt.Sprintf("0/%d Docker hosts fit: %s; placed as soon as one does", total, strings.Join(parts, ", "))
}

func hostReady(h sandboxv1.DockerHost) bool {
	return meta.IsStatusConditionTrue(h.Status.Conditions, sandboxv1.ConditionReady)
}

// load is how full h is: the share of its capacity in use, or its count when unbounded.
func load(h sandboxv1.DockerHost) float64 {
	used := float64(capacity.Used(h).Sandboxes)
	if c := h.Spec.Capacity; c != nil && c.Sandboxes != nil && *c.Sandboxes > 0 {
		return used / float64(*c.Sandboxes)
	}
	return used / 1e6
}
