package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// dockerHostIndex indexes Sandboxes and SandboxPools by the DockerHost they are
// bound to (spec.dockerHost; "" for the unbound).
const dockerHostIndex = "sandbox.roboco.io/docker-host"

// onHost keys a container name by the Docker host it lives on: names are unique
// per host, not across the fleet.
func onHost(dockerHost, name string) string { return dockerHost + "/" + name }

// registerIndexes adds the field indexes every host's controllers share (before
// the cache starts: an index cannot be added to a running informer).
func registerIndexes(mgr ctrl.Manager, opts Options) error {
	indexer := mgr.GetFieldIndexer()
	ctx := context.Background()
	owner := func(obj client.Object) []string {
		sb := obj.(*sandboxv1.Sandbox)
		if name, tracked := trackedOwner(opts, sb); tracked {
			return []string{onHost(sb.Spec.DockerHost, name)}
		}
		return nil
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, ownerIndex, owner); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, containerNameIndex, indexContainerNames); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &sandboxv1.Sandbox{}, dockerHostIndex, func(obj client.Object) []string {
		return []string{obj.(*sandboxv1.Sandbox).Spec.DockerHost}
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &sandboxv1.SandboxPool{}, dockerHostIndex, func(obj client.Object) []string {
		return []string{obj.(*sandboxv1.SandboxPool).Spec.DockerHost}
	})
}
