package v1alpha1

// Condition types. Every condition carries the observedGeneration it describes.
const (
	// ConditionReady summarises: every service answers its probe with the published credentials.
	ConditionReady = "Ready"
	// ConditionImagesReady is true when every service's image is present on the Docker host.
	ConditionImagesReady = "ImagesReady"
	// ConditionContainersRunning is true when every service container exists and runs.
	ConditionContainersRunning = "ContainersRunning"
	// ConditionServicesReady is true when every probe and feature verification passed.
	ConditionServicesReady = "ServicesReady"
	// ConditionOwnerAlive is true while the owner container runs.
	ConditionOwnerAlive = "OwnerAlive"
	// ConditionUpToDate is true when every service container was made with the
	// operator's current settings; false while one is kept behind them (OnDelete).
	ConditionUpToDate = "UpToDate"
	// ConditionReconciling is kstatus' abnormal-true condition: work is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is kstatus' abnormal-true condition: no retry can make progress.
	ConditionStalled = "Stalled"
	// ConditionDataRequest is true when spec.data's request is done on every
	// service it names; false while it runs or when it failed. It never
	// touches Ready: a failed request leaves the services serving.
	ConditionDataRequest = "DataRequest"
)

// Reasons of the DataRequest condition.
const (
	// ReasonDataSucceeded: every service named did it.
	ReasonDataSucceeded = "Succeeded"
	// ReasonDataInProgress: a service named has not done it yet; the message says why.
	ReasonDataInProgress = "InProgress"
	// ReasonDataFailed: a service named failed it; the message has the engine's words.
	ReasonDataFailed = "DataRequestFailed"
)

// Reasons of the Ready condition.
const (
	// ReasonReady: every service is ready.
	ReasonReady = "Ready"
	// ReasonProvisioning: images, containers or probes are still in progress.
	ReasonProvisioning = "Provisioning"
	// ReasonFailed: a service failed in a way the message explains.
	ReasonFailed = "Failed"
	// ReasonDeleting: the Sandbox is being torn down.
	ReasonDeleting = "Deleting"
	// ReasonOwnerGone: the owner container has been gone for the grace period.
	ReasonOwnerGone = "OwnerGone"
)

// Reasons of the ImagesReady condition.
const (
	// ReasonPresent: every image is on the Docker host.
	ReasonPresent = "Present"
	// ReasonPulling: an image is being pulled; the message names it and the time elapsed.
	ReasonPulling = "Pulling"
	// ReasonPullFailed: a pull failed; the message carries the registry's error.
	ReasonPullFailed = "PullFailed"
)

// Reasons of the ContainersRunning condition.
const (
	// ReasonRunning: every container runs (also OwnerAlive's reason when the owner runs).
	ReasonRunning = "Running"
	// ReasonCreating: a container is being created or started.
	ReasonCreating = "Creating"
	// ReasonExited: a container exited; the message has its exit code and last log lines.
	ReasonExited = "Exited"
	// ReasonNameConflict: a container with the service's name belongs to another live Sandbox.
	ReasonNameConflict = "NameConflict"
	// ReasonPaused: a container was paused (docker pause); it is left as it is, not
	// replaced, and resumes serving when unpaused.
	ReasonPaused = "Paused"
)

// Reasons of the ServicesReady condition.
const (
	// ReasonProbing: a service has not yet answered its readiness probe.
	ReasonProbing = "Probing"
	// ReasonProbeTimeout: a service did not answer within its engine's deadline.
	ReasonProbeTimeout = "ProbeTimeout"
	// ReasonDockerHostNotFound: spec.dockerHost names a DockerHost that was
	// deleted; nothing is made, removed or judged for the object until it is
	// registered again.
	ReasonDockerHostNotFound = "DockerHostNotFound"
	// ReasonFeatureVerifyFailed: a requested feature is missing after activation.
	ReasonFeatureVerifyFailed = "FeatureVerifyFailed"
	// ReasonInitFailed: a service's init script failed (the key and its first
	// error line), or its ConfigMap or Secret is missing or not usable; it
	// runs again once they change.
	ReasonInitFailed = "InitFailed"
	// ReasonSeeding: a service answers and its init scripts run, beside the
	// manager's passes; the message says which script and for how long.
	ReasonSeeding = "Seeding"
)

// Reasons of the UpToDate condition.
const (
	// ReasonUpToDate: every container was made with the operator's current settings.
	ReasonUpToDate = "UpToDate"
	// ReasonOutdated: a container runs with earlier operator settings; the message
	// says which and how to roll it out.
	ReasonOutdated = "Outdated"
)

// Reasons of the OwnerAlive condition.
const (
	// ReasonMissing: the owner container is missing or not running (since ownerMissingSince).
	ReasonMissing = "Missing"
	// ReasonNoOwner: owner tracking is off (owner.policy None).
	ReasonNoOwner = "NoOwner"
)

// Reasons shared by several conditions.
const (
	// ReasonDockerUnavailable: the Docker host does not answer; retried with backoff.
	ReasonDockerUnavailable = "DockerUnavailable"
	// ReasonDockerError: a Docker call failed in a way a retry may fix; the message has
	// the daemon's words and when the retry comes (with backoff).
	ReasonDockerError = "DockerError"
	// ReasonInvalidSpec: the spec asks for something the manager does not allow (e.g. memory
	// above its maximum), or the Docker host refused the container it makes (the daemon's words).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSecretConflict: a Secret with the credentials Secret's name exists and is not this Sandbox's.
	ReasonSecretConflict = "SecretConflict"
	// ReasonWrongDockerHost: the Sandbox is bound to another Docker host than the one
	// the manager talks to; the message names both. Nothing is created, removed or
	// judged for it.
	ReasonWrongDockerHost = "WrongDockerHost"
	// ReasonTeardownBlocked (Reconciling): a deleted Sandbox's container could not be
	// removed (the message names it and Docker's words); retried with backoff, the
	// finalizer staying until every container is gone.
	ReasonTeardownBlocked = "TeardownBlocked"
	// ReasonDockerHostUnproven: the manager cannot prove which Docker host it talks
	// to; nothing is created, removed or judged until it can.
	ReasonDockerHostUnproven = "DockerHostUnproven"
)

// Reasons of a SandboxPool's Ready condition.
const (
	// ReasonFull: every wanted member is started and answers its probe.
	ReasonFull = "Full"
	// ReasonFilling: members are being made or probed; the message says how many.
	ReasonFilling = "Filling"
)

// Reasons of a Sandbox's or SandboxPool's Ready condition before placement, and
// of a DockerHost's conditions.
const (
	// ReasonUnschedulable: no DockerHost fits; the message says why for each, and
	// placement retries when a host changes.
	ReasonUnschedulable = "Unschedulable"
	// ReasonCordoned: the DockerHost is cordoned (spec.unschedulable).
	ReasonCordoned = "Cordoned"
	// ReasonSchedulable: placement may put objects on the DockerHost.
	ReasonSchedulable = "Schedulable"
	// ReasonHostDeleting: the DockerHost is being deleted; it waits for the objects bound to it to go.
	ReasonHostDeleting = "Deleting"
	// ReasonReachable: the DockerHost's daemon answers and its identity is proven.
	ReasonReachable = "Reachable"
	// ReasonInsecureEndpoint: a tcp:// endpoint without tls, which the manager does not dial.
	ReasonInsecureEndpoint = "InsecureEndpoint"
)

// ConditionSchedulable is a DockerHost's: true while placement may use it.
const ConditionSchedulable = "Schedulable"

// DockerHostFinalizer keeps a DockerHost while Sandboxes or SandboxPools are
// bound to it: they are served, and torn down, through it until they are gone.
const DockerHostFinalizer = "sandbox.roboco.io/in-use"

// SandboxFinalizer holds a Sandbox until its containers are confirmed gone.
// Placement adds it in the patch that binds the Sandbox to its host (one write
// fewer before a claim); the host's reconciler adds it when nothing placed it.
const SandboxFinalizer = "sandbox.roboco.io/teardown"

// LabelImplicitDockerHost marks the DockerHost a manager made for its own
// --docker-host.
const LabelImplicitDockerHost = "sandbox.roboco.io/implicit"
