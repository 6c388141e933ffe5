package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SandboxPolicySpec says which Docker hosts and networks the Sandboxes and
// pools of a set of namespaces may use.
type SandboxPolicySpec struct {
	// namespaceSelector selects the namespaces the policy applies to, by their
	// labels (which a namespace's tenants cannot set). Only matchLabels, so that
	// the API server's admission policy can judge it.
	// +required
	NamespaceSelector NamespaceLabels `json:"namespaceSelector"`

	// dockerHostSelector admits the DockerHosts the namespaces' Sandboxes and
	// pools may be placed on or pinned to (spec.dockerHost). Empty: any.
	// +optional
	DockerHostSelector *metav1.LabelSelector `json:"dockerHostSelector,omitempty"`

	// networks are the Docker networks the namespaces' Sandboxes and pools may
	// name in spec.network (the operator's --allowed-networks no longer apply to
	// them). Empty: as for any namespace (the default network and
	// --allowed-networks).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=128
	Networks []string `json:"networks,omitempty"`

	// defaultNetwork is the network a Sandbox or pool of these namespaces joins
	// when it names none (instead of the manager's --default-network): a
	// network of their own. It must be one of networks.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	DefaultNetwork string `json:"defaultNetwork,omitempty"`
}

// NamespaceLabels selects namespaces by labels, all of which must match.
type NamespaceLabels struct {
	// matchLabels are the labels a namespace must carry, all of them.
	// +required
	// +kubebuilder:validation:MinProperties=1
	MatchLabels map[string]string `json:"matchLabels"`
}

// SandboxPolicy is the operator's word on what a set of namespaces may use:
// which DockerHosts and which networks their Sandboxes and pools may use,
// pinned ones included. Every policy that selects a namespace applies
// (a host must match each one's dockerHostSelector, a network be in each one's
// networks). A namespace no policy selects keeps the manager's defaults. The
// API server refuses a network outside the policy (the ValidatingAdmissionPolicy
// shipped with the manifests); a Docker host outside it cannot be judged
// there, so such a Sandbox or pool is never placed there, and one pinned there
// stalls with PolicyViolation, naming what is allowed.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sbxpolicy
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaceSelector.matchLabels`
// +kubebuilder:printcolumn:name="Networks",type=string,JSONPath=`.spec.networks`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.defaultNetwork) || size(self.spec.defaultNetwork) == 0 || (has(self.spec.networks) && self.spec.defaultNetwork in self.spec.networks)",message="spec.defaultNetwork must be one of spec.networks"
type SandboxPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy.
	// +required
	Spec SandboxPolicySpec `json:"spec"`
}

// SandboxPolicyList is a list of SandboxPolicies.
// +kubebuilder:object:root=true
type SandboxPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxPolicy `json:"items"`
}

// ReasonPolicyViolation (Stalled, on a Sandbox or pool): a SandboxPolicy of its
// namespace does not allow the Docker host it is pinned to; the message names
// the policy and what it allows. It resumes when the policy or the host's
// labels change.
const ReasonPolicyViolation = "PolicyViolation"

// Selects says whether the policy applies to a namespace with these labels.
func (p *SandboxPolicy) Selects(namespaceLabels map[string]string) bool {
	for k, v := range p.Spec.NamespaceSelector.MatchLabels {
		if got, ok := namespaceLabels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
