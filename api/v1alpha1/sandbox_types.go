package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sandbox is a set of throwaway database services for one AI coding agent,
// run as containers on the controller's Docker host.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbx,categories=all
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentID`
// +kubebuilder:printcolumn:name="Services",type=string,JSONPath=`.status.engines`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Docker Host",type=string,JSONPath=`.spec.dockerHost`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 245",message="metadata.name may have at most 245 characters: the credentials Secret is named <name>-sandbox"
type Sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired set of services.
	// +required
	Spec SandboxSpec `json:"spec"`

	// status is the observed state, written by the controller. Its
	// observedGeneration is -1 until the controller's first status (as Flux's
	// objects do), so kstatus reads a brand-new object as InProgress, not Current.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxList is a list of Sandboxes.
// +kubebuilder:object:root=true
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sandbox `json:"items"`
}
