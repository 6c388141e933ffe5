package sandbox_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// checkpointsOf is status.checkpoints as "name:services" lines.
func checkpointsOf(sb *sandboxv1.Sandbox) func() []string {
	return func() []string {
		var out []string
		for _, c := range ct.Get(sb).Status.Checkpoints {
			out = append(out, fmt.Sprintf("%s:%v", c.Name, c.Services))
		}
		return out
	}
}

var _ = Describe("Named checkpoints (spec.data.name)", func() {
	var (
		sim  *ct.EngineSim
		ns   string
		opts ct.Options
		stop func()
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		ns = ct.NewNamespace()
		opts = ct.TestOptions()
		opts.CheckpointsRelist = 300 * time.Millisecond
		stop = ct.StartManager(sim, opts)
		DeferCleanup(func() { stop() })
	})

	It("keeps several by name, restores each, deletes one, and lists what the containers hold", func() {
		sb := ct.NewSandbox(ns, "named", "ckpt-named", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		ids := idsOf(sb)
		writeAll := func(data string) {
			for _, id := range ids {
				sim.Write(id, data)
			}
		}
		writeAll("a")
		requestNamed(sb, "c1", sandboxv1.DataCheckpoint, "first")
		Eventually(dataPhase(sb)).Should(Equal("c1/Succeeded"))
		writeAll("b")
		requestNamed(sb, "c2", sandboxv1.DataCheckpoint, "second")
		Eventually(dataPhase(sb)).Should(Equal("c2/Succeeded"))
		Expect(checkpointsOf(sb)()).To(Equal([]string{"first:[postgres redis]", "second:[postgres redis]"}))
		Expect(ct.Get(sb).Status.Data.Name).To(Equal("second"))

		requestNamed(sb, "r1", sandboxv1.DataRestore, "first")
		Eventually(dataPhase(sb)).Should(Equal("r1/Succeeded"))
		for _, id := range ids {
			Expect(sim.Holds(id)).To(Equal("a"))
		}
		By("the same id and action under another name is another request")
		requestNamed(sb, "r1", sandboxv1.DataRestore, "second")
		Eventually(func() string { return dataPhase(sb)() + "/" + ct.Get(sb).Status.Data.Name }).Should(Equal("r1/Succeeded/second"))
		for _, id := range ids {
			Expect(sim.Holds(id)).To(Equal("b"))
		}

		requestNamed(sb, "d1", sandboxv1.DataDeleteCheckpoint, "first", sandboxv1.EnginePostgres)
		Eventually(dataPhase(sb)).Should(Equal("d1/Succeeded"))
		Expect(checkpointsOf(sb)()).To(Equal([]string{"first:[redis]", "second:[postgres redis]"}))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.EventCheckpointDeleted))
		requestNamed(sb, "r2", sandboxv1.DataRestore, "first")
		Eventually(dataPhase(sb)).Should(Equal("r2/Failed"))
		Expect(ct.Get(sb).Status.Data.Message).To(ContainSubstring("no checkpoint named first"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Expect(idsOf(sb)).To(Equal(ids))
	})

	It("refuses a checkpoint of a new name past spec.services[].maxCheckpoints, naming the limit, and takes one under a name it holds", func() {
		sb := ct.NewSandbox(ns, "bounded", "ckpt-bounded", "redis")
		two := int32(2)
		sb.Spec.Services[0].MaxCheckpoints = &two
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		for _, n := range []string{"a", "b"} {
			requestNamed(sb, "c-"+n, sandboxv1.DataCheckpoint, n)
			Eventually(dataPhase(sb)).Should(Equal("c-" + n + "/Succeeded"))
		}
		requestNamed(sb, "c-c", sandboxv1.DataCheckpoint, "c")
		Eventually(dataPhase(sb)).Should(Equal("c-c/Failed"))
		Expect(ct.Get(sb).Status.Data.Message).To(ContainSubstring("keeps at most 2 checkpoints"))
		requestNamed(sb, "c-a2", sandboxv1.DataCheckpoint, "a")
		Eventually(dataPhase(sb)).Should(Equal("c-a2/Succeeded"))
		Expect(checkpointsOf(sb)()).To(Equal([]string{"a:[redis]", "b:[redis]"}))
	})

	It("reports checkpoints lost: dropped in the container (found by a listing of its own), or gone with a container made again", func() {
		sb := ct.NewSandbox(ns, "lost", "ckpt-lost", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		id := idsOf(sb)["redis"]
		for _, n := range []string{"a", "b"} {
			requestNamed(sb, "c-"+n, sandboxv1.DataCheckpoint, n)
			Eventually(dataPhase(sb)).Should(Equal("c-" + n + "/Succeeded"))
		}
		By("a listing slower than the pass's inline wait (and than the relisting period) still ends")
		slow := sim.SlowSteps(ct.SlowStep{ID: "data", For: 2 * time.Second})
		sim.DropCheckpoint(id, "a")
		Eventually(checkpointsOf(sb)).Should(Equal([]string{"b:[redis]"}))
		slow()
		Eventually(ct.EventMessages(sb)).Should(ContainElement(ContainSubstring("checkpoints a are gone: its container no longer holds them")))
		requestNamed(sb, "c-c", sandboxv1.DataCheckpoint, "c")
		Eventually(dataPhase(sb)).Should(Equal("c-c/Succeeded"))
		Expect(checkpointsOf(sb)()).To(Equal([]string{"b:[redis]", "c:[redis]"}))

		Expect(sim.Remove(ctx, id, time.Second)).To(Succeed())
		Eventually(func() string { return idsOf(sb)["redis"] }).ShouldNot(Equal(id))
		ct.WaitReady(sb)
		Eventually(checkpointsOf(sb)).Should(BeEmpty())
		Eventually(ct.EventMessages(sb)).Should(ContainElement(ContainSubstring("checkpoints b, c are gone: its container was made again")))
	})

	It("lists, after an upgrade, the checkpoint a release before names took (its status lists none)", func() {
		sb := ct.NewSandbox(ns, "upgraded", "ckpt-upgraded", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		requestData(sb, "c1", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb)).Should(Equal("c1/Succeeded"))
		Expect(checkpointsOf(sb)()).To(Equal([]string{"latest:[redis]"}))

		By("the status as a release before names left it, read by a new manager")
		stop()
		got := ct.Get(sb)
		got.Status.Checkpoints, got.Status.Services[0].Data.Checkpoints = nil, nil
		Expect(k8sClient.Status().Update(ctx, got)).To(Succeed())
		Expect(checkpointsOf(sb)()).To(BeEmpty())
		stop = ct.StartManager(sim, opts)
		Eventually(checkpointsOf(sb)).Should(Equal([]string{"latest:[redis]"}))
	})

	It("refuses, at the API server, a name on a Reset and a name that is not a checkpoint's", func() {
		sb := ct.NewSandbox(ns, "badname", "ckpt-badname", "redis")
		sb.Spec.Data = &sandboxv1.DataRequest{ID: "x", Action: sandboxv1.DataReset, Name: "a"}
		err := k8sClient.Create(ctx, sb)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("data.name names a checkpoint"))
		sb.Spec.Data = &sandboxv1.DataRequest{ID: "x", Action: sandboxv1.DataCheckpoint, Name: "Before_Migration"}
		err = k8sClient.Create(ctx, sb)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("data.name must be lowercase letters"))
		sb.Spec.Data = nil
		too := int32(101)
		sb.Spec.Services[0].MaxCheckpoints = &too
		Expect(k8sClient.Create(ctx, sb)).NotTo(Succeed())
	})
})
