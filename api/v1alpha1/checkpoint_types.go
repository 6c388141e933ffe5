package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ServiceCheckpoint is one checkpoint a service's container holds.
type ServiceCheckpoint struct {
	// name is the checkpoint's.
	Name string `json:"name"`
	// time is when it was taken, by the container's clock.
	Time metav1.Time `json:"time"`
	// sizeBytes is the memory it takes in the container.
	SizeBytes int64 `json:"sizeBytes"`
	// containerID is the container that holds it.
	ContainerID string `json:"containerID"`
}

// SandboxCheckpoint is one checkpoint of a Sandbox: the services that hold
// one of its name.
type SandboxCheckpoint struct {
	// name is the checkpoint's.
	Name string `json:"name"`
	// time is when the first of its services took it.
	Time metav1.Time `json:"time"`
	// services hold a checkpoint of this name.
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Services []Engine `json:"services"`
	// sizeBytes is the memory its services' copies take, together.
	SizeBytes int64 `json:"sizeBytes"`
}
