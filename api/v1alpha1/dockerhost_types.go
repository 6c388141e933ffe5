package v1alpha1

// DockerHostStatus identifies the Docker host a Sandbox is bound to. It is a
// structure so that a later API (several hosts) can add to it.
type DockerHostStatus struct {
	// id is the identity the controller planted on the Docker host (a UUID on a
	// labelled image, sandbox-controller/host-identity) and read back from it: what
	// binds the Sandbox to the host.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ID string `json:"id"`
	// daemonID is the ID the Docker daemon reports of itself (docker info), for
	// people: it does not identify a host, since daemons sharing
	// /etc/docker/key.json report the same one.
	// +optional
	DaemonID string `json:"daemonID,omitempty"`
	// name is the host name the Docker daemon reports (docker info).
	// +optional
	Name string `json:"name,omitempty"`
}

// AnnotationReleaseDockerHost, set on a Sandbox being deleted to the id of the
// Docker host it is bound to (status.dockerHost.id), lets the controller drop its
// finalizer without tearing down: the containers on that host are the operator's
// to remove. Only needed when no manager can reach that host any more.
const AnnotationReleaseDockerHost = "sandbox.roboco.io/release-docker-host"
