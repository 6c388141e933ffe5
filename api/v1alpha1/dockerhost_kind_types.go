package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DockerHostSpec is how to reach a Docker daemon and how much of it Sandboxes may use.
// +kubebuilder:validation:XValidation:rule="!self.endpoint.startsWith('unix://') || !has(self.tls)",message="tls applies to tcp:// endpoints only"
type DockerHostSpec struct {
	// endpoint is the daemon's address: unix:///path/to/docker.sock (reachable only
	// by a manager on that machine) or tcp://host:port with tls (a manager does not
	// dial a tcp:// endpoint without tls, which gives root on the daemon's machine to
	// anyone who reaches it; the host reports Ready False, InsecureEndpoint).
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^unix:///[^ ]+$') || self.matches('^tcp://[^/ ]+:[0-9]+$')",message="endpoint must be unix:///path/to/docker.sock or tcp://host:port"
	Endpoint string `json:"endpoint"`

	// tls is the client certificate and CA for a tcp:// endpoint.
	// +optional
	TLS *DockerHostTLS `json:"tls,omitempty"`

	// capacity bounds what placement puts on the host. Unset: no bound.
	// +optional
	Capacity *DockerHostCapacity `json:"capacity,omitempty"`

	// unschedulable cordons the host: nothing new is placed on it. Sandboxes and
	// pools already bound to it stay and are served as before.
	// +optional
	Unschedulable bool `json:"unschedulable,omitempty"`
}

// DockerHostTLS names the Secret with the TLS material of a tcp:// endpoint.
type DockerHostTLS struct {
	// secretRef is a Secret with keys ca.crt (the daemon's CA), tls.crt and
	// tls.key (the client's certificate and key), as cert-manager writes them.
	// +required
	SecretRef SecretReference `json:"secretRef"`
}

// SecretReference names a Secret in a namespace (a DockerHost has none).
type SecretReference struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// DockerHostCapacity is the most placement puts on a host.
type DockerHostCapacity struct {
	// sandboxes is the most Sandboxes and pool members together.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Sandboxes *int32 `json:"sandboxes,omitempty"`
	// memory is the most memory the services' limits add up to, pool members included.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('0')) >= 0",message="memory must be a quantity such as 64Gi"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// DockerHostState is a DockerHost's observed state. (Not DockerHostStatus: that
// name is the identity a Sandbox's status records, since the first release.)
type DockerHostState struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the daemon answers and its identity is proven),
	// Schedulable (placement may put Sandboxes on it).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// identity is the host's identity as the manager proved it (the planted
	// marker), what Sandboxes bound to it record.
	// +optional
	Identity *DockerHostStatus `json:"identity,omitempty"`

	// daemon is what the Docker daemon reports of itself.
	// +optional
	Daemon *DaemonInfo `json:"daemon,omitempty"`

	// allocated is what placement has put on the host.
	// +optional
	Allocated Allocation `json:"allocated,omitempty"`

	// reservations are placements decided and not yet seen bound: they count
	// against capacity so that two placements cannot both take the last of it.
	// +optional
	// +listType=map
	// +listMapKey=uid
	// +kubebuilder:validation:MaxItems=1000
	Reservations []Reservation `json:"reservations,omitempty"`

	// manager is the manager replica that drives the host (the holder of its Lease).
	// +optional
	Manager string `json:"manager,omitempty"`
}

// DaemonInfo is what a Docker daemon says of itself (docker info).
type DaemonInfo struct {
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// +optional
	OS string `json:"os,omitempty"`
	// +optional
	Arch string `json:"arch,omitempty"`
	// +optional
	CPUs int32 `json:"cpus,omitempty"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// Allocation is what is placed on a host.
type Allocation struct {
	// sandboxes counts the Sandboxes bound to the host and the pool members it keeps.
	// +optional
	Sandboxes int32 `json:"sandboxes"`
	// memory adds up the memory limits of their services.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// Reservation is a placement in flight.
type Reservation struct {
	// uid is the placed object's.
	// +required
	UID string `json:"uid"`
	// object is namespace/name, for people.
	// +optional
	Object string `json:"object,omitempty"`
	// sandboxes and memory are what it takes.
	// +optional
	Sandboxes int32 `json:"sandboxes,omitempty"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// expires is when an unbound reservation stops counting (its placer died).
	// +required
	Expires metav1.Time `json:"expires"`
}

// DockerHost is a Docker daemon the managers place Sandboxes on. Cluster-scoped:
// its labels are what spec.dockerHostSelector of a Sandbox or SandboxPool selects.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dh,categories=all
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Sandboxes",type=integer,JSONPath=`.status.allocated.sandboxes`
// +kubebuilder:printcolumn:name="Capacity",type=integer,JSONPath=`.spec.capacity.sandboxes`
// +kubebuilder:printcolumn:name="Cordoned",type=boolean,JSONPath=`.spec.unschedulable`
// +kubebuilder:printcolumn:name="Manager",type=string,JSONPath=`.status.manager`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name may have at most 63 characters: it is a label value on the host's Lease"
type DockerHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is how to reach the daemon and how much of it to use.
	// +required
	Spec DockerHostSpec `json:"spec"`

	// status is observed by the manager that drives the host.
	// +optional
	// +kubebuilder:default={"observedGeneration":-1}
	Status DockerHostState `json:"status,omitempty"`
}

// DockerHostList is a list of DockerHosts.
// +kubebuilder:object:root=true
type DockerHostList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DockerHost `json:"items"`
}
