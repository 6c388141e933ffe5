package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
