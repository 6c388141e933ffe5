package v1alpha1

// Event reasons the controller reports on a Sandbox (events.k8s.io/v1). Dashboards
// and orchestrators match on them; failures are reported as Warning events whose
// reason is the failing condition's reason (e.g. ReasonExited, ReasonPullFailed).
const (
	// EventProvisioned (Normal): every service answered for the first time.
	EventProvisioned = "Provisioned"
	// EventUpdated (Normal): a container made for an earlier spec is replaced.
	EventUpdated = "Updated"
	// EventRolledOut (Normal): a container made with earlier operator settings is
	// replaced by a rollout (updateStrategy RollingUpdate); its data goes.
	EventRolledOut = "RolledOut"
	// EventRecreated (Normal): a container that exited or vanished is made again
	// with the same credentials.
	EventRecreated = "Recreated"
	// EventStaleRemoved (Normal): a container left by a Sandbox that no longer
	// exists held the service's name and was removed.
	EventStaleRemoved = "StaleRemoved"
	// EventServiceRemoved (Normal): a service left spec.services; its container went.
	EventServiceRemoved = "ServiceRemoved"
	// EventSecretRecreated (Warning): the credentials Secret was deleted by hand.
	EventSecretRecreated = "SecretRecreated"
	// EventExpired (Normal): the ttl passed; the Sandbox is deleted.
	EventExpired = "Expired"
	// EventOwnerMissing (Warning): the owner container stopped running.
	EventOwnerMissing = "OwnerMissing"
	// EventOwnerBack (Normal): the owner container runs again.
	EventOwnerBack = "OwnerBack"
	// EventOwnerGone (Normal): the owner was missing for the grace period; the
	// Sandbox is deleted. Same value as ReasonOwnerGone.
	EventOwnerGone = ReasonOwnerGone
	// EventTornDown (Normal): the containers are confirmed gone.
	EventTornDown = "TornDown"
	// EventTeardownBlocked (Warning): a deleted Sandbox's container could not be
	// removed; the finalizer stays until it is gone. Same value as
	// ReasonTeardownBlocked.
	EventTeardownBlocked = ReasonTeardownBlocked
	// EventSetAside (Warning): Docker could not remove a service's container (it is
	// dead, its root filesystem busy), so it was renamed <name>-dead-<id> to free
	// the service's name; the service is made anew and the dead container removed
	// once Docker can.
	EventSetAside = "SetAside"
	// EventAsideRemoved (Normal): a container set aside (EventSetAside) is removed
	// at last.
	EventAsideRemoved = "AsideRemoved"
	// EventDockerHostBound (Normal): the Sandbox is bound to the Docker host it is
	// provisioned on.
	EventDockerHostBound = "DockerHostBound"
	// EventDockerHostReleased (Warning): a deleted Sandbox bound to an unreachable
	// Docker host was let go on the operator's word (AnnotationReleaseDockerHost),
	// or because its DockerHost was deleted, without tearing down its containers
	// there (a Sandbox that made nothing there goes without it).
	EventDockerHostReleased = "DockerHostReleased"
	// EventDataReset, EventCheckpointed, EventRestored (Normal): a spec.data
	// request was done on a service; a failed one is a Warning with reason
	// ReasonDataFailed.
	EventDataReset    = "DataReset"
	EventCheckpointed = "Checkpointed"
	EventRestored     = "Restored"
	// EventCheckpointDeleted (Normal): a DeleteCheckpoint request was done.
	EventCheckpointDeleted = "CheckpointDeleted"
	// EventCheckpointsLost (Warning): checkpoints a service held are gone
	// without a DeleteCheckpoint: its container was made again (they lived
	// in it), or something in it dropped them (the agent is a superuser).
	EventCheckpointsLost = "CheckpointsLost"
	// EventClaimed (Normal): a service was served by a warm pool member, renamed
	// to the service's container name, its password rotated to the Sandbox's.
	EventClaimed = "Claimed"
	// EventClaimRecovered (Normal): a claim lost with the status (a status
	// rewritten) was found again: the member named as the service's container,
	// of a pool of the Sandbox's namespace, answers to the password of the
	// Sandbox's own Secret (controlled by its UID).
	EventClaimRecovered = "ClaimRecovered"
	// EventClaimRecordIgnored (Warning): a claim annotation (AnnotationClaimPrefix)
	// names a container the Sandbox did not claim; it was ignored and removed.
	EventClaimRecordIgnored = "ClaimRecordIgnored"
	// EventMemberReplaced (Normal, on a SandboxPool): an unclaimed member was
	// removed because it was older than maxAge, of an outdated class, or stopped.
	EventMemberReplaced = "MemberReplaced"
)

// Event actions: what the controller was doing when it reported an event.
const (
	ActionReconcile = "Reconcile"
	ActionValidate  = "Validate"
	ActionDelete    = "Delete"
	ActionTeardown  = "Teardown"
)
