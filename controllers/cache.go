package controllers

import (
	"github.com/roboco-sandbox/sandbox-controller/controllers/sandbox"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions are the cache settings the controllers need from their manager:
// of all Secrets, only the credentials Secrets are cached, whatever their
// SecretLabel's value (a Sandbox's UID, or its name as older releases wrote it);
// no cached object keeps its managedFields.
func CacheOptions() cache.Options {
	ours, err := labels.NewRequirement(sandbox.SecretLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.NewSelector().Add(*ours)},
		},
		// Nothing reads managedFields, and every object has them: a manager
		// caching thousands of Sandboxes would hold them all.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}
