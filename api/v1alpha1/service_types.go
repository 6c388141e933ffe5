package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Note: the enums below must equal internal/engine's registry; a parity test reads the generated CRD.
// +kubebuilder:validation:Enum=postgres;redis;mongo

// Engine names a database engine from the controller's engine registry.
type Engine string

// +kubebuilder:validation:Enum=vector;postgis;pg_trgm;citext;uuid-ossp;search;json;bloom

// Feature names an extension (postgres) or module (redis) from the engine's allowlist.
type Feature string

// OwnerPolicy says whether a Sandbox lives and dies with an owner container.
// +kubebuilder:validation:Enum=Container;None
type OwnerPolicy string

const (
	// OwnerPolicyContainer deletes the Sandbox once its owner container has been gone for the grace period.
	OwnerPolicyContainer OwnerPolicy = "Container"
	// OwnerPolicyNone tracks no owner container; only deletion or the ttl end the Sandbox.
	OwnerPolicyNone OwnerPolicy = "None"
)

// SandboxSpec is what the agent (or its orchestrator) asks for.
// +kubebuilder:validation:XValidation:rule="!has(self.owner) || !has(self.owner.policy) || self.owner.policy != 'None' || !has(self.owner.containerName)",message="owner.containerName must be empty when owner.policy is None"
// +kubebuilder:validation:XValidation:rule="!has(self.data) || !has(self.data.services) || self.data.services.all(e, self.services.exists(s, s.engine == e))",message="data.services must name engines of spec.services"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.dockerHost) || (has(self.dockerHost) && self.dockerHost == oldSelf.dockerHost)",message="dockerHost is immutable once set: delete the object and create it anew to move it to another host"
type SandboxSpec struct {
	// agentID identifies the agent the services are for. It names the containers
	// (roboco-sandbox-<slug>-<agentID>) and, by default, the owner container.
	// Lowercase letters, digits and '-', at most 63 characters; immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="agentID must consist of lowercase letters, digits and '-', and start and end with a letter or digit (e.g. be-dev-1)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="agentID is immutable: delete the Sandbox and create a new one"
	AgentID string `json:"agentID"`

	// owner is what the Sandbox lives and dies with. By default the owner is the
	// container named by the manager's owner template applied to agentID.
	// +optional
	// +kubebuilder:default={}
	Owner *OwnerSpec `json:"owner,omitempty"`

	// Note: maxItems bounds the CEL cost of the per-item rules; it must stay at least
	// the number of engines (the parity test checks).

	// services lists the database services to run, at most one per engine.
	// +required
	// +listType=map
	// +listMapKey=engine
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	Services []ServiceSpec `json:"services"`

	// network is the Docker network the service containers join, with their
	// published host as DNS alias: a user-defined network among those the
	// operator allows (--allowed-networks). Default: the manager's --default-network.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9][a-zA-Z0-9_.-]*$')",message="network must be a Docker network name: letters, digits, '_', '.' and '-', starting with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="!(self in ['host', 'none', 'bridge'])",message="network must not be host, none or bridge: leave it empty for the operator's default network, or name a user-defined network the operator allows"
	Network string `json:"network,omitempty"`

	// ttl is a hard expiry counted from creation: past it the Sandbox deletes itself.
	// A positive Go duration such as 30m or 4h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="ttl must be a positive duration such as 90s, 30m or 4h"
	TTL *metav1.Duration `json:"ttl,omitempty"`

	// updateStrategy says when a running service container made with settings the
	// operator has since changed (images, default limits, hardening) is replaced:
	// OnDelete keeps it, with its data, until it is removed; RollingUpdate
	// replaces it, and its data goes. Changes of this spec (features, the
	// resources and network it sets) and of the credentials always replace it.
	// Default: the manager's --update-strategy.
	// +optional
	UpdateStrategy UpdateStrategyType `json:"updateStrategy,omitempty"`

	// pools says whether the services may claim warm members of SandboxPools in
	// the Sandbox's namespace (default: any pool whose class matches), or always
	// start cold (policy: Never). No match, or an empty pool, starts cold.
	// +optional
	Pools *PoolSelection `json:"pools,omitempty"`

	// conventionalURLs also publishes each service's connection URL under its
	// conventional name, beside ROBOCO_TEST_*_URL: DATABASE_URL (postgres),
	// REDIS_URL (redis), MONGODB_URI (mongo).
	// +optional
	ConventionalURLs bool `json:"conventionalURLs,omitempty"`

	// data asks for a reset, a checkpoint or a restore of the services' data
	// (see DataRequest); status.data says when it is done. kubectl sandbox
	// reset, checkpoint and restore write it and wait.
	// +optional
	Data *DataRequest `json:"data,omitempty"`

	// Placement is the DockerHost the object lives on, or how to choose one.
	Placement `json:",inline"`
}

// UpdateStrategyType is OnDelete or RollingUpdate, as a StatefulSet's.
// +kubebuilder:validation:Enum=OnDelete;RollingUpdate
type UpdateStrategyType string

const (
	// UpdateOnDelete: the operator's changes apply to new containers; a running one
	// is kept until it is removed.
	UpdateOnDelete UpdateStrategyType = "OnDelete"
	// UpdateRollingUpdate: a container behind the operator's settings is replaced.
	UpdateRollingUpdate UpdateStrategyType = "RollingUpdate"
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

// Note: the allowlists must equal internal/engine's; a parity test reads the generated CRD.
// +kubebuilder:validation:XValidation:rule="self.engine != 'postgres' || !has(self.features) || self.features.all(f, f in ['vector', 'postgis', 'pg_trgm', 'citext', 'uuid-ossp'])",message="postgres features must be among: vector, postgis, pg_trgm, citext, uuid-ossp"
// +kubebuilder:validation:XValidation:rule="self.engine != 'redis' || !has(self.features) || self.features.all(f, f in ['search', 'json', 'bloom'])",message="redis features must be among: search, json, bloom"
// +kubebuilder:validation:XValidation:rule="self.engine != 'mongo' || !has(self.features) || self.features.all(f, f in [])",message="mongo supports no features"

// ServiceSpec is one database service of a Sandbox.
type ServiceSpec struct {
	// engine is the database engine: postgres, redis or mongo.
	// +required
	Engine Engine `json:"engine"`

	// features are extensions (postgres: vector, postgis, pg_trgm, citext, uuid-ossp)
	// or modules (redis: search, json, bloom) activated and verified after start.
	// Any feature selects the engine's kitchen-sink image.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	Features []Feature `json:"features,omitempty"`

	// resources caps the service container. Unset values take the manager's
	// defaults; values above the manager's maxima are refused.
	// +optional
	Resources *ServiceResources `json:"resources,omitempty"`

	// version is the engine version, among those the operator offers (the
	// manager's --engine-version); empty: the operator's default. A version not
	// offered stalls the Sandbox with InvalidSpec, naming the offered ones.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*$`
	Version string `json:"version,omitempty"`

	// init seeds the service once it answers, before it counts as ready: the
	// keys of a ConfigMap (or Secret) in the Sandbox's namespace, in lexical
	// order, *.sql through psql (postgres), *.js through mongosh (mongo),
	// *.redis through redis-cli one command per line (redis), each engine
	// running its own suffix, as the published user, stopping at the first
	// error. A changed ConfigMap is run again on a new container.
	// +optional
	Init *ServiceInit `json:"init,omitempty"`
}

// ServiceInit names the scripts that seed a service.
// +kubebuilder:validation:XValidation:rule="has(self.configMapRef) != has(self.secretRef)",message="init takes exactly one of configMapRef and secretRef"
type ServiceInit struct {
	// configMapRef is a ConfigMap in the Sandbox's namespace.
	// +optional
	ConfigMapRef *LocalRef `json:"configMapRef,omitempty"`
	// secretRef is a Secret in the Sandbox's namespace, for scripts that hold secrets.
	// +optional
	SecretRef *LocalRef `json:"secretRef,omitempty"`
}

// LocalRef names an object in the referrer's namespace.
type LocalRef struct {
	// name is the object's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ServiceResources are the memory and CPU caps of a service container.
type ServiceResources struct {
	// memory is the container's memory limit, e.g. 512Mi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="memory must be a positive quantity such as 256Mi or 1Gi"
	Memory *resource.Quantity `json:"memory,omitempty"`

	// cpu is the container's CPU limit in cores, e.g. 1 or 500m: at least 10m
	// (Docker's smallest CPU quota), at most the manager's --max-cpu and the
	// Docker host's CPU count.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('10m')) >= 0",message="cpu must be a quantity of at least 10m (Docker's smallest CPU quota), such as 500m or 2"
	CPU *resource.Quantity `json:"cpu,omitempty"`
}

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

	// admitted is what the Sandbox was admitted to take (its SandboxQuotas and
	// its Docker host's capacity judged it). A change of spec that takes more
	// is judged again before it is applied; until it fits, what runs stays as
	// it is (UpToDate False, reason QuotaExceeded or Unschedulable).
	// +optional
	Admitted *Admitted `json:"admitted,omitempty"`
}

// ServiceClaim records the pool member a service claimed.
type ServiceClaim struct {
	// containerID is the member's container.
	ContainerID string `json:"containerID"`
	// credentials is the hash of the credentials it was rotated to.
	Credentials string `json:"credentials"`
}

// ServiceStatus is the observed state of one service.
type ServiceStatus struct {
	// engine is the service's engine.
	Engine Engine `json:"engine"`
	// containerName is the Docker container's name, roboco-sandbox-<slug>-<agentID>.
	// +optional
	ContainerName string `json:"containerName,omitempty"`
	// containerID is the Docker container's ID.
	// +optional
	ContainerID string `json:"containerID,omitempty"`
	// image is the image the container runs.
	// +optional
	Image string `json:"image,omitempty"`
	// version is the engine version it runs: spec's, or the name of the
	// operator's default.
	// +optional
	Version string `json:"version,omitempty"`
	// host is the name agents on the same Docker network connect to: the
	// container name, or a 63-character alias when that name is longer than a
	// DNS label. On Docker's default bridge, the container's IP.
	// +optional
	Host string `json:"host,omitempty"`
	// port is the service's port on host.
	// +optional
	Port int32 `json:"port,omitempty"`
	// ready is true once the service answered its probe with the published credentials
	// and its features are verified.
	Ready bool `json:"ready"`
	// features are the activated and verified features.
	// +optional
	// +listType=set
	Features []Feature `json:"features,omitempty"`
	// restarts counts how often the container was recreated after it died or vanished.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// outdated is true while the container runs with settings the operator has
	// since changed: it is kept, with its data, until a rollout replaces it (see
	// spec.updateStrategy); the UpToDate condition says how it differs.
	// +optional
	Outdated bool `json:"outdated,omitempty"`
	// data is what spec.data requests did to this service's data.
	// +optional
	Data *ServiceData `json:"data,omitempty"`
}

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
