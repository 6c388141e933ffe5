package sandbox

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// letGo is LetGo on this host's Sandbox, then forgets it.
func (r *Reconciler) letGo(ctx context.Context, sb *sandboxv1.Sandbox) error {
	if err := LetGo(ctx, r.Client, r.APIReader, r.Recorder, sb); err != nil {
		return err
	}
	r.forget(types.NamespacedName{Namespace: sb.Namespace, Name: sb.Name})
	r.claims.Forget(sb.UID)
	return nil
}

// LetGo lets a deleted Sandbox bound to a DockerHost that no longer exists go
// at once: no manager reaches that host, so nothing there can be removed or
// confirmed gone, and waiting would hold it forever. It is mostly one that
// waited and made nothing (a host being deleted is kept until what was
// admitted onto it is gone). What its status records as made there is named
// in a Warning: the orphan sweep removes it should that host be registered
// again. Its Secret and its quota's room go with it.
func LetGo(ctx context.Context, c client.Client, api client.Reader, rec events.EventRecorder, sb *sandboxv1.Sandbox) error {
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return nil
	}
	if made := recorded(sb); len(made) > 0 {
		rec.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventDockerHostReleased, sandboxv1.ActionTeardown,
			"let go without teardown: its DockerHost %s was deleted, so the containers it made there (%s) are not removed; "+
				"the orphan sweep removes them should that host be registered again", sb.Spec.DockerHost, strings.Join(made, ", "))
		logf.FromContext(ctx).Info("Sandbox let go: its DockerHost was deleted", "dockerHost", sb.Spec.DockerHost, "containers", made)
	}
	if err := deleteSecret(ctx, c, api, sb); err != nil {
		return err
	}
	if err := quota.Release(ctx, c, api, sb.Namespace, sb.UID); err != nil {
		return err
	}
	return kit.RemoveFinalizer(ctx, c, sb, Finalizer)
}

// recorded are the containers sb's status records (its services' and claimed
// members'), by short ID.
func recorded(sb *sandboxv1.Sandbox) []string {
	var out []string
	for _, s := range sb.Status.Services {
		if s.ContainerID != "" {
			out = append(out, dd.ShortID(s.ContainerID))
		}
	}
	for _, c := range sb.Status.Claims {
		if id := dd.ShortID(c.ContainerID); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
