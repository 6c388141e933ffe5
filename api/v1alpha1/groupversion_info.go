// Package v1alpha1 contains the Sandbox API: one throwaway set of database services
// (Postgres, Redis, Mongo) per AI coding agent, run as containers on a Docker host.
// +kubebuilder:object:generate=true
// +groupName=sandbox.roboco.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every object in this package.
	GroupVersion = schema.GroupVersion{Group: "sandbox.roboco.io", Version: "v1alpha1"}

	// SchemeBuilder registers the package's types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
