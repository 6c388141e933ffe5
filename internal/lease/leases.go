package lease

import (
	"context"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Config says how several manager replicas share the Docker hosts: one Lease
// per DockerHost in Namespace, held by at most one replica (Identity) at a
// time, each replica taking its fair share (the hosts over the live replicas,
// rounded up; a replica is live while it renews its own member Lease).
type Config struct {
	Namespace, Identity string
	// Duration is how long a Lease not renewed stays its holder's; RetryPeriod
	// is how often each replica renews, takes and gives up Leases.
	Duration, RetryPeriod time.Duration
}

// Lease labels: which DockerHost a host Lease is for, and the member Leases.
const (
	labelLeaseHost   = "sandbox.roboco.io/dockerhost"
	labelLeaseMember = "sandbox.roboco.io/manager"
)

// Table is this replica's view of the Leases: the ones it holds, with when
// each was last renewed by its own monotonic clock, and when it last saw each
// other Lease change (a Lease unchanged for Duration is free to take, judged by
// this replica's clock only, as client-go's leader election does).
type Table struct {
	Config Config
	client client.Client
	// api lists the Leases live: in the Leases' namespace only (the manager's
	// Role grants no more), and never behind this replica's own writes.
	api client.Reader
	// Hosts lists the DockerHosts to share; onAcquire and onLose are told of a
	// Lease taken or given up (onLose before it is given up).
	Hosts             func(ctx context.Context) ([]string, error)
	OnAcquire, OnLose func(host string)

	mu       sync.Mutex
	held     map[string]heldLease
	observed map[string]observation
}

type heldLease struct {
	lease   *coordv1.Lease
	renewed time.Time
}

type observation struct {
	resourceVersion, holder string
	since                   time.Time
}

func NewTable(Config Config, c client.Client, api client.Reader) *Table {
	return &Table{Config: Config, client: c, api: api, held: map[string]heldLease{}, observed: map[string]observation{}}
}

// Holds says whether this replica may act on host now: it holds its Lease, and
// renewed it less than Duration minus RetryPeriod ago by its own clock. Another
// replica takes the Lease only after seeing it unchanged for a whole Duration
// after that renewal, so the two never act at once; a replica frozen past its
// Lease (SIGSTOP) finds this false the moment it resumes.
func (t *Table) Holds(host string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.held[host]
	return ok && time.Since(h.renewed) < t.Config.Duration-t.Config.RetryPeriod
}

// NeedLeaderElection: every replica shares the hosts.
func (t *Table) NeedLeaderElection() bool { return false }

// Start runs the table until ctx ends, then gives up every Lease it holds and
// its member Lease, so that the others take its hosts over (their shares grown
// by its going) without waiting for any Lease to expire.
func (t *Table) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("host-leases")
	tick := time.NewTicker(t.Config.RetryPeriod)
	defer tick.Stop()
	for {
		if err := t.round(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "A round of the host Leases failed; retrying")
		}
		select {
		case <-ctx.Done():
			t.releaseAll(ctx)
			t.leave(ctx)
			return nil
		case <-tick.C:
		}
	}
}
