package kit

import (
	"errors"
	"fmt"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// HostRecheck is how often a Sandbox bound to another Docker host is looked at
// again, with the host's identity read afresh: an operator may have pointed the
// manager back, or restored the host's marker.
const HostRecheck = time.Minute

func HostReason(err error) string {
	if errors.Is(err, dd.ErrUnavailable) {
		return sandboxv1.ReasonDockerUnavailable
	}
	return sandboxv1.ReasonDockerHostUnproven
}

func WrongHostMessage(bound sandboxv1.DockerHostStatus, current dd.HostIdentity, then string) string {
	return fmt.Sprintf("bound to Docker host %s, but the manager talks to Docker host %s: %s",
		DescribeHost(bound), DescribeHost(*HostStatus(current)), then)
}

func HostStatus(id dd.HostIdentity) *sandboxv1.DockerHostStatus {
	return &sandboxv1.DockerHostStatus{ID: id.ID, DaemonID: id.DaemonID, Name: id.Name}
}

// DescribeHost names a host for people: its identity, then what the daemon says.
func DescribeHost(h sandboxv1.DockerHostStatus) string {
	return fmt.Sprintf("%s (daemon %q, name %q)", h.ID, h.DaemonID, h.Name)
}
