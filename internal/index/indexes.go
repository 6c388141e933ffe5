package index

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// DockerHost indexes Sandboxes and SandboxPools by the DockerHost they are
// bound to (spec.dockerHost; "" for the unbound).
const DockerHost = "sandbox.roboco.io/docker-host"

// OnHost keys a container name by the Docker host it lives on: names are unique
// per host, not across the fleet.
func OnHost(dockerHost, name string) string { return dockerHost + "/" + name }

// Register adds the field indexes every host's controllers share (before
// the cache starts: an index cannot be added to a running informer).
func Register(mgr ctrl.Manager, opts options.Options) error {
	indexer := mgr.GetFieldIndexer()
	ctx := context.Background()
	owner := func(obj client.Object) []string {
		sb := obj.(*sandboxv1.Sandbox)
		if name, tracked := opts.TrackedOwner(sb); tracked {
			return []string{OnHost(sb.Spec.DockerHost, name)}
		}
		return nil
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, Owner, owner); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, ContainerName, indexContainerNames); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, PublishedName, indexPublishedNames); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, DockerHost, func(obj client.Object) []string {
		return []string{obj.(*sandboxv1.Sandbox).Spec.DockerHost}
	}); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, InitConfigMap, initConfigMaps); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, ClaimedContainer, claimedContainers); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &sandboxv1.SandboxPool{}, DockerHost, func(obj client.Object) []string {
		return []string{obj.(*sandboxv1.SandboxPool).Spec.DockerHost}
	})
}

// ClaimedContainer indexes Sandboxes by the pool members their claim records
// (status.claims) name: a pool offers none of them, renamed or not.
const ClaimedContainer = "sandbox.roboco.io/claimed-container"

func claimedContainers(obj client.Object) []string {
	var ids []string
	for _, c := range obj.(*sandboxv1.Sandbox).Status.Claims {
		if c.ContainerID != "" {
			ids = append(ids, c.ContainerID)
		}
	}
	return ids
}

// Recorded says whether a Sandbox of namespace records a claim of container id.
func Recorded(ctx context.Context, reader client.Reader, namespace, id string) (bool, error) {
	var list sandboxv1.SandboxList
	if err := reader.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{ClaimedContainer: id}); err != nil {
		return false, err
	}
	return len(list.Items) > 0, nil
}

// InitConfigMap indexes Sandboxes by the ConfigMaps their services' init
// names, so a ConfigMap's change finds its Sandboxes without a scan.
const InitConfigMap = "sandbox.roboco.io/init-configmap"

func initConfigMaps(obj client.Object) []string {
	var out []string
	for _, svc := range obj.(*sandboxv1.Sandbox).Spec.Services {
		if svc.Init != nil && svc.Init.ConfigMapRef != nil {
			out = append(out, svc.Init.ConfigMapRef.Name)
		}
	}
	return out
}

// Owner indexes Sandboxes by the owner container they track (after the
// manager's owner template), so an owner's Docker event finds its Sandboxes
// without a scan. Sandboxes with owner.policy None are not in it.
const Owner = "sandbox.roboco.io/owner-container"

// ContainerName indexes Sandboxes by the names of their service containers, so
// the destroy of a container holding one finds the Sandbox waiting for it.
const ContainerName = "sandbox.roboco.io/container-name"

// indexContainerNames is the ContainerName index function.
func indexContainerNames(obj client.Object) []string {
	return onHostNames(obj, func(e engine.Engine, agentID string) []string { return []string{engine.ContainerName(e, agentID)} })
}

// onHostNames is names of each service of a Sandbox, keyed by its host (OnHost).
func onHostNames(obj client.Object, names func(e engine.Engine, agentID string) []string) []string {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok {
		return nil
	}
	var out []string
	for _, svc := range sb.Spec.Services {
		if e, ok := engine.Lookup(string(svc.Engine)); ok {
			for _, n := range names(e, sb.Spec.AgentID) {
				out = append(out, OnHost(sb.Spec.DockerHost, n))
			}
		}
	}
	return out
}

// PublishedName indexes Sandboxes by every name their services answer to on
// their Docker host's networks (container name, and the alias of a longer one;
// by host, see OnHost), so that no two Sandboxes of a host take one.
const PublishedName = "sandbox.roboco.io/published-name"

func indexPublishedNames(obj client.Object) []string { return onHostNames(obj, engine.ServiceNames) }

// BoundTo lists, from the cache, the Sandboxes bound to the Docker host name.
func BoundTo(ctx context.Context, reader client.Reader, name string) ([]types.NamespacedName, error) {
	var list sandboxv1.SandboxList
	if err := reader.List(ctx, &list, client.MatchingFields{DockerHost: name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	keys := make([]types.NamespacedName, 0, len(list.Items))
	for i := range list.Items {
		keys = append(keys, types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
	return keys, nil
}

// BoundToHost admits the objects bound to the DockerHost name (spec.dockerHost).
func BoundToHost(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool { return DockerHostOf(obj) == name })
}

// DockerHostOf is the DockerHost a Sandbox or SandboxPool is bound to.
func DockerHostOf(obj client.Object) string {
	switch o := obj.(type) {
	case interface{ GetDockerHost() string }:
		return o.GetDockerHost()
	default:
		return ""
	}
}
