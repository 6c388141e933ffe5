// Package admission is the one admission of the Sandboxes and pools bound to a
// Docker host: the gates they pass before anything of them is made there, or
// grown — their namespace's SandboxPolicies (internal/policy), the host's
// cordon, deletion and capacity (internal/capacity), their namespace's
// SandboxQuotas (internal/quota) — judged in that order for what an object
// asks beyond what it was admitted to (status.admitted); and the watches that
// wake what waits on them (Waiters). Both the Sandbox and the SandboxPool
// reconcilers call it; each says the verdict in its own conditions.
package admission

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/policy"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// HostRecheck and QuotaRecheck are how often an object waiting for its host,
// or for quota, looks again besides on their changes (Waiters).
const (
	HostRecheck  = 30 * time.Second
	QuotaRecheck = 30 * time.Second
)

// Gate admits the objects bound to one Docker host.
type Gate struct {
	// Client reads the cache and writes the host's reservations and the
	// quotas' admissions in flight; API reads around the cache.
	Client  client.Client
	API     client.Reader
	Options options.Options
	Host    string
}

// Admit judges what r asks, gate by gate. A refused gate ends a held request
// (a Sandbox: what runs stays as it was admitted); it caps the units of any
// other (a pool: it makes the members the gates leave room for). Only what
// r asks beyond r.Admitted is judged, so the common pass writes nothing.
func (g Gate) Admit(ctx context.Context, r Request) (Verdict, error) {
	v := Verdict{Waiting: r.Admitted == nil && !r.Made}
	most := r.Want
	if !r.Placed {
		why, err := policy.HostRefusal(ctx, g.Client, r.Namespace, g.Host)
		if err != nil {
			return Verdict{}, err
		}
		if why != "" {
			v.Policy = "spec.dockerHost " + g.Host + ": " + why
			if r.Hold {
				v.Waiting = true // not placed: it waits whatever it was admitted to
				return v, nil
			}
			most = r.Runs
		}
	}
	onHost, err := g.onHost(ctx, r, &v)
	if err != nil || v.Retry || v.Host != "" && r.Hold {
		return v.holding(r), err
	}
	count := min(most, onHost)
	q, err := quota.Admit(ctx, g.Client, g.API, quota.Request{Namespace: r.Namespace, Name: r.Name, Kind: r.Kind,
		UID: r.UID, Unit: r.Unit, Count: count, Min: min(r.Runs, count), Recorded: r.Admitted, Hold: r.Hold})
	switch {
	case apierrors.IsConflict(err):
		v.Retry = true
		return v.holding(r), nil
	case err != nil:
		return v.holding(r), err
	}
	v.Units, v.Quota = q.Admitted, q.Why
	switch {
	case r.Hold && v.Quota != "":
		return v.holding(r), nil
	case r.Hold || onHost > 0 || r.Recorded != nil:
		v.Admitted = r.Unit.Times(v.Units).Admitted()
	}
	return v, nil
}

// onHost judges r against the host's cordon, capacity and deletion: the units
// it admits, all r wants or, refused, what r was admitted to (a cordon, a
// deletion or a lowered capacity evicts nothing). Spec.dockerHost, set by the
// author, skips placement, which checks them (unlike a pod's spec.nodeName,
// which skips every check the scheduler makes).
func (g Gate) onHost(ctx context.Context, r Request, v *Verdict) (int32, error) {
	a := capacity.Admission{Client: g.Client, API: g.API, Cache: g.Client, Options: g.Options}
	req := capacity.Request{Key: r.Namespace + "/" + r.Name, UID: string(r.UID), Need: demand(r.Unit.Times(r.Want))}
	if r.Admitted != nil {
		d := demand(*r.Admitted)
		req.Admitted = &d
	}
	why, err := a.Admit(ctx, g.Host, req, r.Waiting)
	switch {
	case apierrors.IsConflict(err):
		v.Retry = true
		return 0, nil
	case err != nil || why == "":
		return r.Want, err
	}
	v.Host = why
	return units(r.Admitted), nil
}

// demand is what amounts take of a host (a pool's members count as Sandboxes).
func demand(a quota.Amounts) capacity.Demand {
	return capacity.OfAdmitted(a.Admitted())
}

// units is how many units a record admits (each unit counts one Sandbox or
// one member).
func units(a *quota.Amounts) int32 {
	if a == nil {
		return 0
	}
	return a.Sandboxes + a.PoolMembers
}

// Verdict is what the gates said: the units admitted, and each refusal.
type Verdict struct {
	// Units is how many units are admitted (a pool makes members up to it).
	Units int32
	// Admitted is what the object's status.admitted says from now on (nil:
	// leave it as it is), written with the pass's status.
	Admitted *sandboxv1.Admitted
	// Policy, Host and Quota say why each gate refused ("": it admitted, or
	// was not asked).
	Policy, Host, Quota string
	// Waiting: refused, the object waits whole: it holds nothing here (no
	// record, nothing made), or, held and refused by a SandboxPolicy, is
	// not placed here yet.
	Waiting bool
	// Retry: a conflict; look again soon, judged no further.
	Retry bool
}

// holding is the verdict of a held request that is not admitted all it asks:
// it stays at what it counts at (recorded now if its status had no record).
func (v Verdict) holding(r Request) Verdict {
	if r.Hold && r.Recorded == nil && r.Admitted != nil {
		v.Admitted = r.Admitted.Admitted() // made by an earlier release: counted at its demand
	}
	return v
}

// Refused: a gate refused (some of) what was asked.
func (v Verdict) Refused() bool { return v.Reason() != "" }

// Reason is the first refusal's condition reason ("": none).
func (v Verdict) Reason() string {
	switch {
	case v.Policy != "":
		return sandboxv1.ReasonPolicyViolation
	case v.Host != "":
		return sandboxv1.ReasonUnschedulable
	case v.Quota != "":
		return sandboxv1.ReasonQuotaExceeded
	}
	return ""
}

// Why is the first refusal's words.
func (v Verdict) Why() string {
	switch {
	case v.Policy != "":
		return v.Policy
	case v.Host != "":
		return v.Host
	}
	return v.Quota
}

// Recheck is when to look again besides on the watches: soon after a
// conflict, later after a refusal (0: admitted).
func (v Verdict) Recheck() time.Duration {
	switch {
	case v.Retry:
		return kit.ConflictRetry
	case v.Policy != "":
		return kit.Jitter(kit.StalledRecheck)
	case v.Host != "":
		return kit.Jitter(HostRecheck)
	case v.Quota != "":
		return kit.Jitter(QuotaRecheck)
	}
	return 0
}
