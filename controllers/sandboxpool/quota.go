package sandboxpool

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/quota"
)

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxquotas/status,verbs=get;update;patch

// admitMembers holds room under its namespace's SandboxQuotas for as many of
// the members the host admits as they have room for, records what was admitted
// in the pool's status, and lowers ms.missing to it: a member is made only
// once admitted. The members there are stay admitted whatever the quota says.
// A pool its host or policy keeps from making members holds room only for
// those it has (ms.missing, lowered by them, is 0): what it cannot make is not
// kept from others. why is "" when every wanted member is admitted.
func (p *Reconciler) admitMembers(ctx context.Context, pool *sandboxv1.SandboxPool, ms *poolMembers, onHost int32) (why string, err error) {
	have := int32(len(ms.ready) + len(ms.starting))
	count := min(onHost, have+int32(ms.missing))
	unit := quota.Member(p.Options, pool)
	v, err := quota.Admit(ctx, p.Client, p.API, quota.Request{Namespace: pool.Namespace, Name: pool.Name, Kind: "SandboxPool",
		UID: pool.UID, Unit: unit, Count: count, Min: min(have, count), Recorded: quota.RecordedPool(p.Options, pool)})
	if err != nil {
		if apierrors.IsConflict(err) {
			ms.missing = 0 // looked at again soon (the caller re-queues a pass that made none)
			return "", nil
		}
		return "", err
	}
	if onHost > 0 || pool.Status.Admitted != nil {
		pool.Status.Admitted = unit.Times(v.Admitted).Admitted()
	}
	ms.missing = min(ms.missing, max(0, int(v.Admitted-have)))
	return v.Why, nil
}

// poolQuotaExceeded: members are missing because a quota has no room for them.
func poolQuotaExceeded(pool *sandboxv1.SandboxPool, why string) {
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonQuotaExceeded, why)
}

// waitingForQuota maps a SandboxQuota's change to the pools of its namespace on
// this host that wait for room.
func (p *Reconciler) waitingForQuota(ctx context.Context, q client.Object) []reconcile.Request {
	return p.onHostWith(ctx, q.GetNamespace(), sandboxv1.ConditionReady, sandboxv1.ReasonQuotaExceeded)
}
