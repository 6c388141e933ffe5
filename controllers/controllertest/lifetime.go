package controllertest

import (
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// LifetimeOptions are the test options with a short grace period.
func LifetimeOptions(grace time.Duration) Options {
	o := TestOptions()
	o.GracePeriod = grace
	return o
}

// SeedOwner runs a stand-in agent container, made behind the controller's back as
// the agent's orchestrator would.
func SeedOwner(host *EngineSim, name string) {
	_, err := host.SeedContainer(dd.ContainerSpec{Name: name, Image: "roboco/agent:latest"}, true)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
}

// OwnedSandbox is a Sandbox that follows its owner container (the default owner,
// roboco-agent-<agentID>); grace 0 leaves the manager's grace period.
func OwnedSandbox(ns, name, agentID string, grace time.Duration, engines ...string) *sandboxv1.Sandbox {
	sb := NewSandbox(ns, name, agentID, engines...)
	sb.Spec.Owner = &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyContainer}
	if grace > 0 {
		sb.Spec.Owner.GracePeriod = &metav1.Duration{Duration: grace}
	}
	return sb
}

// MissingSince is the Sandbox's status.ownerMissingSince.
func MissingSince(sb *sandboxv1.Sandbox) *metav1.Time {
	return Get(sb).Status.OwnerMissingSince
}

// Deleting reports whether the Sandbox is being deleted or gone.
func Deleting(sb *sandboxv1.Sandbox) bool {
	got := &sandboxv1.Sandbox{}
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got)
	if apierrors.IsNotFound(err) {
		return true
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return !got.DeletionTimestamp.IsZero()
}

// ContainerIDs lists the IDs of the containers a Sandbox's UID label claims.
func ContainerIDs(host *EngineSim, sb *sandboxv1.Sandbox) []string {
	var ids []string
	for _, c := range ContainersOf(host, sb) {
		ids = append(ids, c.ID)
	}
	return ids
}
