package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxPoolSpec is how many warm members of one service class to keep.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.dockerHost) || (has(self.dockerHost) && self.dockerHost == oldSelf.dockerHost)",message="dockerHost is immutable once set: delete the object and create it anew to move it to another host"
type SandboxPoolSpec struct {
	// replicas is how many started, probed, unclaimed members to keep. A claim
	// takes one; the pool makes a new one in the background.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`

	// service is the class of the members: engine, features and resources, as in a
	// Sandbox's spec.services. A Sandbox's service claims a member when its
	// engine, features and resources (after the manager's defaults) and its
	// network are the pool's.
	// +required
	Service ServiceSpec `json:"service"`

	// network is the Docker network the members join, as a Sandbox's
	// spec.network (default: the manager's --default-network). Members carry no
	// alias there until claimed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9][a-zA-Z0-9_.-]*$')",message="network must be a Docker network name: letters, digits, '_', '.' and '-', starting with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="!(self in ['host', 'none', 'bridge'])",message="network must not be host, none or bridge: leave it empty for the operator's default network, or name a user-defined network the operator allows"
	Network string `json:"network,omitempty"`

	// maxAge replaces an unclaimed member older than it (a positive duration such
	// as 12h). Default: members are kept until claimed or outdated.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="maxAge must be a positive duration such as 30m or 12h"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`

	// Placement is the DockerHost the object lives on, or how to choose one.
	Placement `json:",inline"`
}

// SandboxPoolStatus is what the pool holds.
type SandboxPoolStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replicas is how many unclaimed members exist, started or not (the scale
	// subresource's status replicas).
	// +optional
	Replicas int32 `json:"replicas"`

	// readyReplicas is how many unclaimed members answered their probe: what a
	// claim can take now.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// claimed counts the members Sandboxes have claimed from this pool.
	// +optional
	Claimed int64 `json:"claimed"`

	// selector selects the pool's members (a label selector over Docker labels, for
	// the scale subresource and an HPA).
	// +optional
	Selector string `json:"selector,omitempty"`

	// conditions: Ready (every wanted member is ready), Stalled (the class cannot
	// be made, the message says why).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// dockerHost is the Docker host the pool's members live on.
	// +optional
	DockerHost *DockerHostStatus `json:"dockerHost,omitempty"`

	// admitted is what the pool's members were admitted to take (its
	// SandboxQuotas and its Docker host's capacity judged them): members
	// beyond it are made only once a new admission passes.
	// +optional
	Admitted *Admitted `json:"admitted,omitempty"`
}

// SandboxPool keeps started, probed service containers of one class on the
// Docker host, with credentials no agent learns and names no agent resolves, for
// Sandboxes in its namespace to claim: a claim renames the member to the
// Sandbox's container name and rotates its password to the Sandbox's own.
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=sbxpool,categories=all
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.service.engine`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Claimed",type=integer,JSONPath=`.status.claimed`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SandboxPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the class and size of the pool.
	// +required
	Spec SandboxPoolSpec `json:"spec"`

	// status is the observed state, written by the controller. Its
	// observedGeneration is -1 until the controller's first status (as Flux's
	// objects do), so kstatus reads a brand-new object as InProgress, not Current.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status SandboxPoolStatus `json:"status,omitempty"`
}

// SandboxPoolList is a list of SandboxPools.
// +kubebuilder:object:root=true
type SandboxPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxPool `json:"items"`
}

// PoolPolicy says whether a Sandbox's services may claim pool members.
// +kubebuilder:validation:Enum=Auto;Never
type PoolPolicy string

const (
	// PoolPolicyAuto claims a ready member of a matching pool in the Sandbox's
	// namespace when there is one, and provisions cold otherwise.
	PoolPolicyAuto PoolPolicy = "Auto"
	// PoolPolicyNever always provisions cold.
	PoolPolicyNever PoolPolicy = "Never"
)

// PoolSelection is how a Sandbox uses warm pools.
type PoolSelection struct {
	// policy is Auto (default) or Never.
	// +optional
	// +kubebuilder:default=Auto
	Policy PoolPolicy `json:"policy,omitempty"`

	// names restricts claims to these pools of the Sandbox's namespace (default:
	// any pool whose class matches).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`
}

// AnnotationClaimPrefix, followed by an engine name, is the annotation in which
// releases before status.claims recorded a claim. The controller no longer reads
// it: on a Sandbox it is removed, and reported (event ClaimRecordIgnored) when it
// names a container the Sandbox did not claim (see docs/pools.md).
const AnnotationClaimPrefix = "claim.sandbox.roboco.io/"
