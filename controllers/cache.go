package controllers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox"
)

// CacheOptions are the cache settings the controllers need from their manager:
// of all Secrets, only the credentials Secrets are cached, whatever their
// SecretLabel's value (a Sandbox's UID, or its name as older releases wrote it);
// no cached object keeps its managedFields. What a tenant writes into objects
// the manager only needs to name is not kept either: the ConfigMaps (watched as
// metadata, to wake what their scripts seed) without their annotations, a
// Secret without the copy of its data kubectl apply leaves in an annotation.
func CacheOptions() cache.Options {
	ours, err := labels.NewRequirement(sandbox.SecretLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	configMaps := &metav1.PartialObjectMetadata{}
	configMaps.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.NewSelector().Add(*ours), Transform: chain(cache.TransformStripManagedFields(), dropAnnotations(lastApplied))},
			configMaps:       {Transform: chain(cache.TransformStripManagedFields(), dropAnnotations())},
		},
		// Nothing reads managedFields, and every object has them: a manager
		// caching thousands of Sandboxes would hold them all.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// lastApplied is where client-side kubectl apply keeps the whole object it
// applied, a Secret's data included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// dropAnnotations removes the named annotations of an object (none named: all).
func dropAnnotations(names ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, ok := in.(metav1.Object)
		if !ok {
			return in, nil
		}
		if len(names) == 0 {
			obj.SetAnnotations(nil)
			return in, nil
		}
		if a := obj.GetAnnotations(); a != nil {
			for _, n := range names {
				delete(a, n)
			}
		}
		return in, nil
	}
}

// chain applies each transform in turn.
func chain(fs ...toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		var err error
		for _, f := range fs {
			if in, err = f(in); err != nil {
				return nil, err
			}
		}
		return in, nil
	}
}
