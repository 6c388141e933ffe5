package quota

import (
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/capacity"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// OfSandbox is what sb's spec asks: one Sandbox, its services' memory.
func OfSandbox(o options.Options, sb *sandboxv1.Sandbox) Amounts {
	return Amounts{Sandboxes: 1, Memory: capacity.OfSandbox(o, sb).Memory}
}

// Member is what one of pool's members takes.
func Member(o options.Options, pool *sandboxv1.SandboxPool) Amounts {
	return Amounts{PoolMembers: 1, Memory: capacity.OfMember(o, pool).Memory}
}

// RecordedSandbox is what sb is counted at: its status.admitted, or, when that
// record is lost (or was written by an earlier release, which kept none) while
// it made something, its full demand. nil: it holds nothing.
func RecordedSandbox(o options.Options, sb *sandboxv1.Sandbox) *Amounts {
	if a := FromAdmitted(sb.Status.Admitted); a != nil {
		return a
	}
	if !capacity.MadeAnything(sb) {
		return nil
	}
	a := OfSandbox(o, sb)
	return &a
}

// RecordedPool is what pool is counted at: its status.admitted, or, without
// one, its wanted members (an earlier release kept no record; the pool's next
// pass records what it admits).
func RecordedPool(o options.Options, pool *sandboxv1.SandboxPool) *Amounts {
	if a := FromAdmitted(pool.Status.Admitted); a != nil {
		return a
	}
	if pool.Status.Replicas == 0 && pool.Status.Claimed == 0 {
		return nil
	}
	a := Member(o, pool).Times(pool.Status.Replicas)
	return &a
}
