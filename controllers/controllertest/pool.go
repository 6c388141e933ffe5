package controllertest

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// NewPool is a pool of replicas members of engine.
func NewPool(ns, name, engine string, replicas int32) *sandboxv1.SandboxPool {
	return &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sandboxv1.SandboxPoolSpec{Replicas: ptr.To(replicas), Service: sandboxv1.ServiceSpec{Engine: sandboxv1.Engine(engine)}}}
}

// GetPool reads a pool from the API server.
func GetPool(p *sandboxv1.SandboxPool) *sandboxv1.SandboxPool {
	out := &sandboxv1.SandboxPool{}
	gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKeyFromObject(p), out)).To(gomega.Succeed())
	return out
}

// EditPool changes a pool's spec, retrying on conflicts (the manager writes its
// status and finalizer meanwhile).
func EditPool(p *sandboxv1.SandboxPool, change func(*sandboxv1.SandboxPoolSpec)) {
	gomega.EventuallyWithOffset(1, func() error {
		cur := GetPool(p)
		change(&cur.Spec)
		return k8sClient.Update(ctx, cur)
	}).Should(gomega.Succeed())
}

// PoolCounts is "ready/replicas/claimed" of a pool's status.
func PoolCounts(p *sandboxv1.SandboxPool) func() [3]int64 {
	return func() [3]int64 {
		got := GetPool(p).Status
		return [3]int64{int64(got.ReadyReplicas), int64(got.Replicas), got.Claimed}
	}
}

// PoolDescribe says what a pool's status holds, for failure messages.
func PoolDescribe(p *sandboxv1.SandboxPool) func() string {
	return func() string { return fmt.Sprintf("%+v", GetPool(p).Status) }
}

// Members lists a pool's containers, claimed or not (p read from the API
// server once: keep it to list after the pool is gone).
func Members(host *EngineSim, p *sandboxv1.SandboxPool) []dd.ContainerSummary {
	if p.UID == "" {
		p.UID = GetPool(p).UID
	}
	cs, err := host.List(ctx, map[string]string{shost.LabelPoolUID: string(p.UID)})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return cs
}

// RedisPing runs a redis probe with password inside container id.
func RedisPing(host *EngineSim, id, password string) string {
	res, err := host.Exec(ctx, id, dd.ExecSpec{Cmd: []string{"redis-cli", "-h", "x", "PING"}, Env: map[string]string{"REDISCLI_AUTH": password}})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return strings.TrimSpace(res.Stdout)
}

// Reclaimed waits until sb's one service is Ready in another container than id,
// and returns it.
func Reclaimed(sb *sandboxv1.Sandbox, id string) string {
	var next string
	gomega.EventuallyWithOffset(2, func() bool {
		s := Get(sb)
		next = s.Status.Services[0].ContainerID
		return sandboxv1.IsReady(s) && next != id
	}, 30*time.Second).Should(gomega.BeTrue(), func() string { return fmt.Sprintf("not served again: %+v", Get(sb).Status) })
	return next
}

// Reclaim removes the container serving sb's one service, as if it vanished,
// and returns the pool member that serves it next: a claim for a Sandbox whose
// Secret exists, so the member is rotated to the Secret's password.
func Reclaim(host *EngineSim, sb *sandboxv1.Sandbox, id string) string {
	gomega.ExpectWithOffset(1, host.DeleteContainer(id)).To(gomega.Succeed())
	next := Reclaimed(sb, id)
	c, _ := host.Peek(next)
	gomega.ExpectWithOffset(1, c.Labels).To(gomega.HaveKey(shost.LabelPoolUID), "not served by a member")
	return next
}

// StripFinalizers deletes obj without letting its finalizer run (a force).
func StripFinalizers(obj client.Object) {
	gomega.Expect(k8sClient.Delete(ctx, obj)).To(gomega.Succeed())
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetFinalizers(nil)
	gomega.Expect(client.IgnoreNotFound(k8sClient.Patch(ctx, obj, patch))).To(gomega.Succeed())
}

// IsMember says whether a container is named as a pool member.
func IsMember(c dd.ContainerSummary) bool { return len(c.Name) > 12 && c.Name[:12] == "sandboxpool-" }

// PoolGone says whether a pool is gone from the API server.
func PoolGone(p *sandboxv1.SandboxPool) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &sandboxv1.SandboxPool{}))
	}
}
