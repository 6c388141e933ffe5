package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OwnerPolicy says whether a Sandbox lives and dies with an owner container.
// +kubebuilder:validation:Enum=Container;None
type OwnerPolicy string

const (
	// OwnerPolicyContainer deletes the Sandbox once its owner container has been gone for the grace period.
	OwnerPolicyContainer OwnerPolicy = "Container"
	// OwnerPolicyNone tracks no owner container; only deletion or the ttl end the Sandbox.
	OwnerPolicyNone OwnerPolicy = "None"
)

// OwnerSpec names the owner container and how long it may be gone.
type OwnerSpec struct {
	// policy is Container (default: the Sandbox is deleted once the owner container
	// has been missing for gracePeriod) or None (no owner tracking).
	// +optional
	// +kubebuilder:default=Container
	Policy OwnerPolicy `json:"policy,omitempty"`

	// containerName is the Docker container the Sandbox belongs to.
	// Default: the manager's --owner-template applied to agentID (roboco-agent-<agentID>).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9][a-zA-Z0-9_.-]*$')",message="containerName must be a Docker container name: letters, digits, '_', '.' and '-', starting with a letter or digit"
	ContainerName string `json:"containerName,omitempty"`

	// gracePeriod is how long the owner container may be missing before the
	// Sandbox is deleted. A positive Go duration such as 180s. Default: the manager's --grace-period.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="gracePeriod must be a positive duration such as 180s or 5m"
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
}
