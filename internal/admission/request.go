package admission

import (
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// Kinds of objects admitted, as the quotas name them.
const (
	KindSandbox = "Sandbox"
	KindPool    = "SandboxPool"
)

// Request is what an object asks of its host and its namespace's quotas.
type Request struct {
	Kind, Namespace, Name string
	UID                   types.UID
	// Waiting: it waits to be admitted, so its host does not count it
	// (capacity.Waiting).
	Waiting bool
	// Unit is what one unit takes (a Sandbox's whole demand; one member of a
	// pool), and Want how many its spec asks (1; a pool's replicas).
	Unit quota.Amounts
	Want int32
	// Runs is how many units run and stay admitted whatever the gates say (a
	// pool's members; a Sandbox holds its record instead).
	Runs int32
	// Recorded is its status.admitted as it stands; Admitted what it counts
	// at: the record, or, without one, what an earlier release made (nil:
	// nothing).
	Recorded *sandboxv1.Admitted
	Admitted *quota.Amounts
	// Hold: what is refused holds the object at what it was admitted to (a
	// Sandbox's growth is all or nothing), rather than admitting the units
	// the gates leave room for (a pool).
	Hold bool
	// Made: it made something on the host. Placed: and so its namespace's
	// SandboxPolicies judge it no more (a Sandbox that runs; a policy changed
	// later evicts nothing). A pool's members are each made anew: never
	// placed.
	Made, Placed bool
}

// ForSandbox is what sb asks: itself, as its spec says, all or nothing.
func ForSandbox(o options.Options, sb *sandboxv1.Sandbox) Request {
	made := capacity.MadeAnything(sb)
	return Request{Kind: KindSandbox, Namespace: sb.Namespace, Name: sb.Name, UID: sb.UID, Waiting: capacity.Waiting(sb),
		Unit: quota.OfSandbox(o, sb), Want: 1, Recorded: sb.Status.Admitted, Admitted: quota.RecordedSandbox(o, sb),
		Hold: true, Made: made, Placed: made}
}

// KeepingRecord is r asking no less than it was admitted to: a shrink is
// not admitted here, since what it drops may still run (a removal that
// fails, a container not yet replaced); its caller gives the room back once
// what runs matches the spec (asking r itself).
func (r Request) KeepingRecord() Request {
	if r.Admitted != nil {
		r.Unit = r.Unit.Max(*r.Admitted)
	}
	return r
}

// ForPool is what pool asks: its replicas, of which runs run and made
// containers are on the host (the unwanted among them too).
func ForPool(o options.Options, pool *sandboxv1.SandboxPool, runs, made int) Request {
	want := int32(1)
	if pool.Spec.Replicas != nil {
		want = *pool.Spec.Replicas
	}
	return Request{Kind: KindPool, Namespace: pool.Namespace, Name: pool.Name, UID: pool.UID, Waiting: capacity.Waiting(pool),
		Unit: quota.Member(o, pool), Want: want, Runs: int32(runs), Recorded: pool.Status.Admitted,
		Admitted: quota.RecordedPool(o, pool), Made: made > 0}
}
