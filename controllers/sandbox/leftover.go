package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// A credentials Secret can outlive its Sandbox: a pass that makes it while
// the Sandbox is torn down elsewhere (a replica finishing a pass after handing
// its host's Lease on, a create answered late) leaves one that no teardown
// sees again. The garbage collector is not relied on (teardown.go says why),
// so whoever sees such a Secret deletes it: the pass of a Sandbox found gone,
// and the pass of a new Sandbox of the same name, which would stall on it.

// leftoverSecret says whether a credentials Secret is one a gone Sandbox
// left: it carries SecretLabel, its controller is a Sandbox, and the API
// server no longer has a Sandbox of that name and UID (UIDs are never reused).
func leftoverSecret(ctx context.Context, api client.Reader, s metav1.Object) (bool, error) {
	owner := metav1.GetControllerOfNoCopy(s)
	if _, ours := s.GetLabels()[SecretLabel]; !ours || owner == nil || owner.Kind != "Sandbox" ||
		owner.APIVersion != sandboxv1.GroupVersion.String() {
		return false, nil
	}
	sb := &sandboxv1.Sandbox{}
	err := api.Get(ctx, types.NamespacedName{Namespace: s.GetNamespace(), Name: owner.Name}, sb)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading the Sandbox of Secret %s: %w", s.GetName(), err)
	}
	return sb.UID != owner.UID, nil
}

// dropLeftover deletes s if a gone Sandbox left it (leftoverSecret), only that
// version of it (a UID precondition), and says whether it did.
func dropLeftover(ctx context.Context, c client.Writer, api client.Reader, s metav1.Object) (bool, error) {
	if left, err := leftoverSecret(ctx, api, s); err != nil || !left {
		return false, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.GetNamespace(), Name: s.GetName()}}
	err := c.Delete(ctx, secret, client.Preconditions{UID: new(s.GetUID())})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil // its teardown's delete, seen late by the cache
	case err != nil:
		return false, fmt.Errorf("deleting Secret %s, left by a gone Sandbox: %w", s.GetName(), err)
	}
	logf.FromContext(ctx).Info("Deleted a credentials Secret its gone Sandbox left", "secret", s.GetName(), "sandboxUID", s.GetLabels()[SecretLabel])
	return true, nil
}

// dropLeftoverOf deletes the Secret of the gone Sandbox key, if it left one
// (the manager's cache of its Secrets says whether there is one to look at).
func (r *Reconciler) dropLeftoverOf(ctx context.Context, key types.NamespacedName) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	gone := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: sandboxv1.SecretName(gone)}, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	_, err := dropLeftover(ctx, r.Client, r.APIReader, m)
	return err
}

// ownerNotCached says whether the Sandbox controlling a Secret is absent from
// the cache, or being deleted there: a Secret made then may be a leftover, and
// its create event brings a pass that looks (the Secrets a pass makes for a
// live Sandbox bring none).
func (r *Reconciler) ownerNotCached(s client.Object) bool {
	owner := metav1.GetControllerOfNoCopy(s)
	if owner == nil || owner.Kind != "Sandbox" {
		return false
	}
	sb := &sandboxv1.Sandbox{}
	err := r.Get(context.Background(), types.NamespacedName{Namespace: s.GetNamespace(), Name: owner.Name}, sb)
	return err != nil || sb.UID != owner.UID || !sb.DeletionTimestamp.IsZero()
}
