package sandboxpool

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// setPoolStatus reports the members a pass found, and created more of.
func setPoolStatus(pool *sandboxv1.SandboxPool, ms poolMembers, created int) {
	want := ptrOr(pool.Spec.Replicas, 1)
	s := &pool.Status
	s.Replicas = int32(len(ms.ready) + len(ms.starting) + ms.creating + created)
	s.ReadyReplicas = int32(len(ms.ready))
	s.Claimed = int64(ms.claimed)
	s.Selector = host.LabelPoolUID + "=" + string(pool.UID)
	meta.RemoveStatusCondition(&s.Conditions, sandboxv1.ConditionStalled)
	if s.ReadyReplicas >= want {
		kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionTrue, sandboxv1.ReasonFull,
			fmt.Sprintf("%d of %d members ready to claim", s.ReadyReplicas, want))
		return
	}
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonFilling,
		fmt.Sprintf("%d of %d members ready to claim, %d starting", s.ReadyReplicas, want, s.Replicas-s.ReadyReplicas))
}

// poolStalled: the class cannot be made (the message names what is allowed).
func poolStalled(pool *sandboxv1.SandboxPool, message string) {
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, sandboxv1.ReasonInvalidSpec, message)
	kit.SetCondition(pool, sandboxv1.ConditionStalled, metav1.ConditionTrue, sandboxv1.ReasonInvalidSpec, message)
}

// poolDockerDown: a Docker call failed; the pool retries with backoff.
func poolDockerDown(pool *sandboxv1.SandboxPool, err error) {
	reason := sandboxv1.ReasonDockerError
	if errors.Is(err, dd.ErrUnavailable) {
		reason = sandboxv1.ReasonDockerUnavailable
	}
	kit.SetCondition(pool, sandboxv1.ConditionReady, metav1.ConditionFalse, reason, err.Error())
}
