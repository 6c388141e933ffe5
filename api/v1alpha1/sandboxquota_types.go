package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// QuotaAmounts are amounts a namespace's Sandboxes and pools take. In a spec's
// hard, an unset amount is not limited.
type QuotaAmounts struct {
	// sandboxes is the number of Sandboxes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Sandboxes *int32 `json:"sandboxes,omitempty"`
	// poolMembers is the number of warm pool members: the sum of the pools'
	// spec.replicas (a claimed member counts as its Sandbox from the claim on).
	// +optional
	// +kubebuilder:validation:Minimum=0
	PoolMembers *int32 `json:"poolMembers,omitempty"`
	// memory is the sum of the services' memory limits (the operator's default
	// where a service sets none), pool members included.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// SandboxQuotaSpec is what a namespace may take.
type SandboxQuotaSpec struct {
	// hard is the most the namespace's Sandboxes and pools may take together.
	// +required
	Hard QuotaAmounts `json:"hard"`
}

// Admitted is what an object (a Sandbox or a pool) was admitted to take, by its
// namespace's SandboxQuotas and its Docker host: the manager records it in the
// object's status (which tenants cannot write) when an admission passes, and
// judges any change that would take more against both before anything of it is
// made. A quota's used is the sum of its objects' admitted amounts.
type Admitted struct {
	// sandboxes it takes (1 for a Sandbox, 0 for a pool).
	// +optional
	Sandboxes int32 `json:"sandboxes,omitempty"`
	// poolMembers it takes (a pool's admitted members, 0 for a Sandbox).
	// +optional
	PoolMembers int32 `json:"poolMembers,omitempty"`
	// memory it takes: its services' (or members') memory limits summed.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// QuotaAdmission is one admission in flight: the quota counts it from the
// moment it is written (with the quota's resourceVersion as a precondition: of
// two objects racing for the last room one gets a conflict and looks again, so
// the sum never passes hard) until the object's own status.admitted records it,
// when the quota's recount drops the entry. Entries written by earlier releases
// (one per admitted object) are read the same way, so an upgrade counts each
// object once.
type QuotaAdmission struct {
	// uid is the admitted object's metadata.uid.
	// +required
	UID types.UID `json:"uid"`
	// kind is Sandbox or SandboxPool.
	// +required
	// +kubebuilder:validation:Enum=Sandbox;SandboxPool
	Kind string `json:"kind"`
	// name is the object's name in the quota's namespace.
	// +required
	Name string `json:"name"`
	// sandboxes it takes (1 for a Sandbox, 0 for a pool).
	// +optional
	Sandboxes int32 `json:"sandboxes,omitempty"`
	// poolMembers it takes (a pool's replicas, 0 for a Sandbox).
	// +optional
	PoolMembers int32 `json:"poolMembers,omitempty"`
	// memory it takes.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// SandboxQuotaStatus is what the namespace takes now.
type SandboxQuotaStatus struct {
	// observedGeneration is the spec generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// hard is the enforced limit (spec.hard as last observed).
	// +optional
	Hard QuotaAmounts `json:"hard,omitempty"`
	// used is what the namespace's objects were admitted to take: each object's
	// status.admitted (or its admission in flight), an object that made
	// containers without a record at its full demand.
	// +optional
	Used QuotaAmounts `json:"used,omitempty"`
	// summary is used against hard, for kubectl get: "sandboxes 3/10, memory 768Mi/4Gi".
	// +optional
	Summary string `json:"summary,omitempty"`
	// admitted are the admissions in flight: written with used, dropped once the
	// object's own status.admitted records them (so the quota does not grow
	// with its objects). Only the manager writes them.
	// +optional
	// +listType=map
	// +listMapKey=uid
	Admitted []QuotaAdmission `json:"admitted,omitempty"`
}

// SandboxQuota limits what the Sandboxes and SandboxPools of its namespace take
// of the Docker hosts: their number, their pool members, their memory. A
// Sandbox or pool that would pass a quota of its namespace waits, Ready False
// with reason QuotaExceeded, and starts once room frees; nothing of it is made
// before. Several quotas in one namespace each apply. Namespaces without one are
// not limited. Tenants read their quota (the shipped viewer and editor roles);
// only the operator writes it.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sbxquota
// +kubebuilder:printcolumn:name="Used",type=string,JSONPath=`.status.summary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the limit.
	// +required
	Spec SandboxQuotaSpec `json:"spec"`

	// status is what the namespace takes, written by the manager.
	// +optional
	Status SandboxQuotaStatus `json:"status,omitempty"`
}

// SandboxQuotaList is a list of SandboxQuotas.
// +kubebuilder:object:root=true
type SandboxQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxQuota `json:"items"`
}

// ReasonQuotaExceeded (Ready False, Reconciling True, on a Sandbox or pool): a
// SandboxQuota of its namespace has no room for it; the message names the
// quota, what is used, what it needs and the hard limit. It starts once room frees.
const ReasonQuotaExceeded = "QuotaExceeded"
