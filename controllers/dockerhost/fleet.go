package dockerhost

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Fleet is what the DockerHost controller needs of the controllers that drive
// each host (the manager's fleet implements it).
type Fleet interface {
	// Host is the host name's controllers, if this manager drives it yet.
	Host(name string) (DrivenHost, bool)
	// AddDialled sets up the controllers of a host on a driver dialled from its spec.
	AddDialled(name string, driver dd.Driver, endpoint, tlsVersion string) (DrivenHost, error)
	// Retire stops the controllers of a host whose DockerHost is gone from
	// acting, and has what is bound to it told so.
	Retire(ctx context.Context, name string)
	// Holds says whether this replica acts on the host name now.
	Holds(name string) bool
	// Manager names this replica when replicas share the hosts by Leases ("": they do not).
	Manager() string
	// Taken tells of each host this replica just took.
	Taken() <-chan event.TypedGenericEvent[*sandboxv1.DockerHost]
}

// DrivenHost is one host's controllers, as the DockerHost controller sees them.
type DrivenHost interface {
	// Driver is the host's driver as its controllers use it.
	Driver() dd.Driver
	// ProveHost proves which Docker host the driver reaches.
	ProveHost(ctx context.Context) (dd.HostIdentity, error)
	// Dialled is what the driver was dialled with (empty for the manager's own host).
	Dialled() (endpoint, tlsVersion string)
	// Redial points the host's controllers at a new driver.
	Redial(driver dd.Driver, endpoint, tlsVersion string)
	// Revive lets a retired host's controllers act again: its DockerHost is back.
	Revive(ctx context.Context)
	// Enqueue re-queues a Sandbox bound to the host.
	Enqueue(key types.NamespacedName)
}
