package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxStatus is what the controller observed and did.
type SandboxStatus struct {
	// observedGeneration is the metadata.generation this status describes; -1
	// until the controller's first status.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready (the summary), ImagesReady, ContainersRunning,
	// ServicesReady, OwnerAlive, and kstatus' Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// services reports each service's container and endpoint.
	// +optional
	// +listType=map
	// +listMapKey=engine
	Services []ServiceStatus `json:"services,omitempty"`

	// engines lists the engines of spec.services, comma-separated, for the Services
	// printer column (a column shows only the first match of a list).
	// +optional
	Engines string `json:"engines,omitempty"`

	// secretName is the Secret in the Sandbox's namespace holding the
	// ROBOCO_TEST_* connection variables (credentials never appear in status).
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// ownerMissingSince is when the owner container was first seen missing or
	// stopped; cleared when it is back.
	// +optional
	OwnerMissingSince *metav1.Time `json:"ownerMissingSince,omitempty"`

	// dockerHost is the Docker host the Sandbox is bound to, recorded on its first
	// pass before any container exists. A manager that talks to another host, or
	// cannot prove which host it talks to, does nothing for the Sandbox.
	// +optional
	DockerHost *DockerHostStatus `json:"dockerHost,omitempty"`

	// claims are the warm pool members serving this Sandbox's services, by engine.
	// The controller writes a claim here, through the status subresource, before
	// the rename that makes it: which container serves a Sandbox is never what an
	// editor of its spec or metadata writes. A claim lost with the status is found
	// again by the member answering to the Sandbox's password.
	// +optional
	Claims map[string]ServiceClaim `json:"claims,omitempty"`

	// data is what became of spec.data.
	// +optional
	Data *DataRequestStatus `json:"data,omitempty"`

	// checkpoints are the checkpoints the services' containers hold, by name
	// (each service's own are in services[].data.checkpoints).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=300
	Checkpoints []SandboxCheckpoint `json:"checkpoints,omitempty"`

	// admitted is what the Sandbox was admitted to take (its SandboxQuotas and
	// its Docker host's capacity judged it). A change of spec that takes more
	// is judged again before it is applied; until it fits, what runs stays as
	// it is (UpToDate False, reason QuotaExceeded or Unschedulable).
	// +optional
	Admitted *Admitted `json:"admitted,omitempty"`
}
