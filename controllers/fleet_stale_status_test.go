package controllers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// stalled is a replica's client that, once a pass of the Sandbox named name
// writes it Ready, holds that write until release is closed and cuts the
// replica off from its Leases from then on: a replica paused mid-pass (a long
// GC, a partition) whose Lease expires meanwhile.
type stalled struct {
	client.Client
	name          string
	cut           atomic.Bool
	held, release chan struct{}
	wrote         chan error
}

func newStalled(name string) *stalled {
	return &stalled{name: name, held: make(chan struct{}), release: make(chan struct{}), wrote: make(chan error, 1)}
}

func (s *stalled) make(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.New(cfg, opts)
	s.Client = c
	return s, err
}

var errPartitioned = errors.New("partitioned from the API server")

func (s *stalled) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, lease := obj.(*coordv1.Lease); lease && s.cut.Load() {
		return errPartitioned
	}
	return s.Client.Update(ctx, obj, opts...)
}

func (s *stalled) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, lease := obj.(*coordv1.Lease); lease && s.cut.Load() {
		return errPartitioned
	}
	return s.Client.Create(ctx, obj, opts...)
}

func (s *stalled) Status() client.SubResourceWriter { return stalledStatus{s.Client.Status(), s} }

type stalledStatus struct {
	client.SubResourceWriter
	s *stalled
}

func (w stalledStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok || sb.Name != w.s.name || !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1.ConditionReady) || !w.s.cut.CompareAndSwap(false, true) {
		return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	close(w.s.held)
	<-w.s.release
	err := w.SubResourceWriter.Patch(context.WithoutCancel(ctx), obj, patch, opts...)
	w.s.wrote <- err
	return err
}

var _ = Describe("A replica whose Lease expired mid-pass", func() {
	It("does not write what it learned over what the replica holding the host now wrote: no Ready on a removed container", func() {
		ns, leaseNS := ct.NewNamespace(), ct.NewNamespace()
		sim := ct.NewHost()
		ct.RegisterHost("stale-a", nil, nil)
		hosts := map[string]*ct.EngineSim{"stale-a": sim}
		r1 := newStalled("late")
		stop1 := replicaClient(leaseNS, "r1", hosts, 2*time.Second, r1.make)
		Eventually(managerOf("stale-a")).Should(Equal("r1"))
		sb := ct.NewSandbox(ns, "late", "late-1", "redis")
		sb.Spec.DockerHost = "stale-a"
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())

		By("r1's pass holds its Ready while its Lease runs out and r2 takes the host")
		Eventually(r1.held, 30*time.Second).Should(BeClosed())
		DeferCleanup(func() {
			select {
			case <-r1.release:
			default:
				close(r1.release)
			}
			stop1()
		})
		replica(leaseNS, "r2", hosts, 2*time.Second)
		Eventually(managerOf("stale-a"), 20*time.Second).Should(Equal("r2"), leasesIn(leaseNS))
		ct.WaitReady(sb)

		By("the container is removed, and cannot be made again: r2 says so")
		DeferCleanup(sim.Inject(fake.Fault{Verb: fake.VerbCreateContainer, Err: errors.New("no space left on device")}))
		for _, c := range ct.ContainersOf(sim, sb) {
			Expect(sim.DeleteContainer(c.ID)).To(Succeed())
		}
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 20*time.Second).ShouldNot(HavePrefix("True/"))

		By("r1's held write goes out late")
		close(r1.release)
		Eventually(r1.wrote, 20*time.Second).Should(Receive())
		Expect(ct.ContainersOf(sim, sb)).To(BeEmpty())
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).NotTo(HavePrefix("True/"),
			"a Ready from a pass that began before r2 took the host must not replace what r2 wrote")
	})
})
