// Package v1alpha1 contains the Sandbox API: one throwaway set of database services
// (Postgres, Redis, Mongo) per AI coding agent, run as containers on a Docker host.
// The package comment lives in doc.go, where Kubernetes' code generators read its
// tags (the group name) for the typed clients in api/client.
// +kubebuilder:object:generate=true
// +groupName=sandbox.roboco.io
// +groupGoName=Sandbox
package v1alpha1
