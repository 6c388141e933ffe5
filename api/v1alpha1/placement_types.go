package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Placement binds a Sandbox or SandboxPool to a DockerHost, as a pod's
// spec.nodeName binds it to a node: in spec, so that a restored backup keeps it.
type Placement struct {
	// dockerHost is the DockerHost the object lives on. Set it to choose; left
	// empty, the manager's placement sets it: a Sandbox beside its owner container
	// when one host runs it, else a host dockerHostSelector admits, with capacity
	// left, least loaded first. Set once, then immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="dockerHost must be the name of a DockerHost: lowercase letters, digits, '-' and '.'"
	DockerHost string `json:"dockerHost,omitempty"`

	// dockerHostSelector restricts placement to DockerHosts with these labels.
	// +optional
	DockerHostSelector *metav1.LabelSelector `json:"dockerHostSelector,omitempty"`
}

// GetDockerHost is the DockerHost the Sandbox is bound to ("" until placed).
func (s *Sandbox) GetDockerHost() string { return s.Spec.DockerHost }

// GetDockerHost is the DockerHost the pool is bound to ("" until placed).
func (p *SandboxPool) GetDockerHost() string { return p.Spec.DockerHost }
