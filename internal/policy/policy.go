// Package policy is what the operator's SandboxPolicies allow a namespace: the
// DockerHosts (placement, and the check of a pinned host) and the networks (a
// service's network) of its Sandboxes and pools. A namespace no policy selects
// keeps the manager's defaults.
package policy

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// Effective are the policies that select one namespace, by name.
type Effective struct {
	Namespace string
	Policies  []sandboxv1.SandboxPolicy
}

// For reads the policies selecting namespace (its labels read as metadata only).
func For(ctx context.Context, c client.Reader, namespace string) (Effective, error) {
	e := Effective{Namespace: namespace}
	var list sandboxv1.SandboxPolicyList
	if err := c.List(ctx, &list); err != nil {
		return e, err
	}
	if len(list.Items) == 0 {
		return e, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return e, err
	}
	for _, p := range list.Items {
		if p.Selects(ns.Labels) {
			e.Policies = append(e.Policies, p)
		}
	}
	sort.Slice(e.Policies, func(i, j int) bool { return e.Policies[i].Name < e.Policies[j].Name })
	return e, nil
}

// HostAllowed says why the policies refuse DockerHost h ("" when every one admits it).
func (e Effective) HostAllowed(h *sandboxv1.DockerHost) string {
	for _, p := range e.Policies {
		if p.Spec.DockerHostSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.DockerHostSelector)
		if err != nil {
			return fmt.Sprintf("SandboxPolicy %s: dockerHostSelector: %v", p.Name, err)
		}
		if !sel.Matches(labels.Set(h.Labels)) {
			return fmt.Sprintf("SandboxPolicy %s allows namespace %s only DockerHosts matching %s", p.Name, e.Namespace, sel)
		}
	}
	return ""
}

// Network is the network a service asking for requested joins, or why the
// policies (or, without any, the operator's flags) refuse it.
func (e Effective) Network(o options.Options, requested string) (string, error) {
	var limiting []sandboxv1.SandboxPolicy
	for _, p := range e.Policies {
		if len(p.Spec.Networks) > 0 {
			limiting = append(limiting, p)
		}
	}
	if len(limiting) == 0 {
		return o.Network(requested)
	}
	if requested == "" {
		requested = e.defaultNetwork(o, limiting)
	}
	for _, p := range limiting {
		if !slices.Contains(p.Spec.Networks, requested) {
			return "", fmt.Errorf("network %q is not allowed in namespace %s by SandboxPolicy %s; allowed: %s",
				cmp.Or(requested, "(the manager's default)"), e.Namespace, p.Name, strings.Join(p.Spec.Networks, ", "))
		}
	}
	return requested, nil
}

// defaultNetwork is the first policy's own defaultNetwork, else the manager's.
func (e Effective) defaultNetwork(o options.Options, limiting []sandboxv1.SandboxPolicy) string {
	for _, p := range limiting {
		if p.Spec.DefaultNetwork != "" {
			return p.Spec.DefaultNetwork
		}
	}
	return o.DefaultNetwork
}

// HostRefusal says why the policies of namespace refuse the DockerHost named
// host ("" when they allow it, or none selects the namespace).
func HostRefusal(ctx context.Context, c client.Reader, namespace, host string) (string, error) {
	e, err := For(ctx, c, namespace)
	if err != nil || len(e.Policies) == 0 {
		return "", err
	}
	h := &sandboxv1.DockerHost{}
	if err := c.Get(ctx, client.ObjectKey{Name: host}, h); err != nil {
		// Note: a host not registered (yet) is judged by the binding's own checks.
		return "", client.IgnoreNotFound(err)
	}
	return e.HostAllowed(h), nil
}
