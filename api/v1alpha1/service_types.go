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

	// maxCheckpoints is how many named checkpoints the service may keep
	// (default and ceiling: the manager's --max-checkpoints, itself at most
	// 100); a Checkpoint of a new name past it fails, naming the limit. Each
	// also counts against the service's memory.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	MaxCheckpoints *int32 `json:"maxCheckpoints,omitempty"`
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
	// timeout bounds the whole seed, all its scripts together (each is also
	// bounded by the manager's --init-script-timeout): past it the seed is
	// stopped and the service fails with InitFailed. A positive Go duration
	// such as 90s or 20m, at most 24h; one above the manager's
	// --init-max-timeout (30m by default) fails the service with InitFailed,
	// naming it. Default: 10m, or --init-max-timeout when lower.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s') && duration(self) <= duration('24h')",message="init.timeout must be a positive duration of at most 24h, such as 90s or 20m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
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
