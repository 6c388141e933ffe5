package sandbox_test

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// requestData writes spec.data as an orchestrator would: one merge patch.
func requestData(sb *sandboxv1.Sandbox, id string, action sandboxv1.DataAction, services ...sandboxv1.Engine) {
	requestNamed(sb, id, action, "", services...)
}

// requestNamed is requestData for the checkpoint of a name ("": latest).
func requestNamed(sb *sandboxv1.Sandbox, id string, action sandboxv1.DataAction, name string, services ...sandboxv1.Engine) {
	// Note: a merge patch keeps the fields it leaves out: services and name
	// are null, not absent, to mean all and latest.
	var n any
	if name != "" {
		n = name
	}
	data := map[string]any{"id": id, "action": action, "services": services, "name": n}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"data": data}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, k8sClient.Patch(ctx, sb, client.RawPatch(types.MergePatchType, body))).To(Succeed())
}

// dataPhase is status.data's "id/phase", for readable matchers.
func dataPhase(sb *sandboxv1.Sandbox) func() string {
	return func() string {
		got := &sandboxv1.Sandbox{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil || got.Status.Data == nil {
			return ""
		}
		return got.Status.Data.ID + "/" + string(got.Status.Data.Phase)
	}
}

func serviceStatus(sb *sandboxv1.Sandbox, e sandboxv1.Engine) sandboxv1.ServiceStatus {
	for _, s := range ct.Get(sb).Status.Services {
		if s.Engine == e {
			return s
		}
	}
	Fail("no status for " + string(e))
	return sandboxv1.ServiceStatus{}
}

// idsOf maps each service's engine to its container ID.
func idsOf(sb *sandboxv1.Sandbox) map[sandboxv1.Engine]string {
	out := map[sandboxv1.Engine]string{}
	for _, s := range ct.Get(sb).Status.Services {
		out[s.Engine] = s.ContainerID
	}
	return out
}

var _ = Describe("Reset, checkpoint and restore (spec.data)", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManager(sim, ct.TestOptions())
		DeferCleanup(func() { stop() })
	})

	It("checkpoints, restores and resets in the same containers, the Secret's bytes unchanged", func() {
		sb := ct.NewSandbox(ns, "loop", "data-loop", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		secret, ids := ct.SecretOf(sb), idsOf(sb)
		for _, id := range ids {
			sim.Write(id, "migrated")
		}

		requestData(sb, "c1", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb)).Should(Equal("c1/Succeeded"))
		Expect(ct.Condition(sb, sandboxv1.ConditionDataRequest)()).To(Equal("True/Succeeded"))
		for e, id := range ids {
			ckpt := serviceStatus(sb, e).Data.LastCheckpoint
			Expect(ckpt).NotTo(BeNil(), "%s has no lastCheckpoint", e)
			Expect(ckpt.ID).To(Equal("c1"))
			Expect(ckpt.ContainerID).To(Equal(id))
			Expect(ckpt.Generation).To(Equal(ct.Get(sb).Generation))
			sim.Write(id, "test data")
		}

		requestData(sb, "r1", sandboxv1.DataRestore)
		Eventually(dataPhase(sb)).Should(Equal("r1/Succeeded"))
		for _, id := range ids {
			Expect(sim.Holds(id)).To(Equal("migrated"))
		}

		requestData(sb, "z1", sandboxv1.DataReset)
		Eventually(dataPhase(sb)).Should(Equal("z1/Succeeded"))
		for e, id := range ids {
			Expect(sim.Holds(id)).To(BeEmpty(), "%s was not reset", e)
			Expect(serviceStatus(sb, e).Data.LastReset.ID).To(Equal("z1"))
			Expect(serviceStatus(sb, e).Data.LastRestore.ID).To(Equal("r1"))
		}
		Expect(ct.SecretOf(sb)).To(Equal(secret))
		Expect(idsOf(sb)).To(Equal(ids))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Eventually(ct.EventReasons(sb)).Should(ContainElements(sandboxv1.EventCheckpointed, sandboxv1.EventRestored, sandboxv1.EventDataReset))

		By("doing each request once, whatever passes follow")
		Expect(k8sClient.Patch(ctx, sb, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"poke":"1"}}}`)))).To(Succeed())
		Consistently(func() int { return sim.OpsRun(ids["postgres"], engine.OpReset) }, "1s").Should(Equal(1))
	})

	It("runs a request that reuses an id with another action, never reporting it done unrun", func() {
		sb := ct.NewSandbox(ns, "reuse", "data-reuse", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		id := idsOf(sb)["redis"]
		// request is status.data's "id/action/services/phase": which request the phase is for.
		request := func() string {
			d := ct.Get(sb).Status.Data
			if d == nil {
				return ""
			}
			return fmt.Sprintf("%s/%s/%v/%s", d.ID, d.Action, d.Services, d.Phase)
		}
		sim.Write(id, "migrated")
		requestData(sb, "d1", sandboxv1.DataCheckpoint)
		Eventually(request).Should(Equal("d1/Checkpoint/[]/Succeeded"))
		sim.Write(id, "test data")

		requestData(sb, "d1", sandboxv1.DataRestore)
		Eventually(func() string { return sim.Holds(id) }).Should(Equal("migrated"), "the restore did not run")
		Eventually(request).Should(Equal("d1/Restore/[]/Succeeded"))
		Expect(serviceStatus(sb, "redis").Data.LastRestore.ID).To(Equal("d1"))
		Expect(serviceStatus(sb, "redis").Data.RequestAction).To(Equal(sandboxv1.DataRestore))

		By("running the first action again when it comes back under the same id")
		sim.Write(id, "tested")
		requestData(sb, "d1", sandboxv1.DataCheckpoint)
		Eventually(func() int { return sim.OpsRun(id, engine.OpCheckpoint) }).Should(Equal(2))
		Eventually(request).Should(Equal("d1/Checkpoint/[]/Succeeded"))

		By("running it again on a service when the request names other services")
		requestData(sb, "d1", sandboxv1.DataCheckpoint, "redis")
		Eventually(func() int { return sim.OpsRun(id, engine.OpCheckpoint) }).Should(Equal(3))
		Eventually(request).Should(Equal("d1/Checkpoint/[redis]/Succeeded"))
		Expect(sim.OpsRun(id, engine.OpRestore)).To(Equal(1))
	})

	It("fails mongo's checkpoint at once, saying why, while postgres and redis checkpoint", func() {
		sb := ct.NewSandbox(ns, "trio", "data-trio", "postgres", "redis", "mongo")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		requestData(sb, "c1", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb)).Should(Equal("c1/Failed"))
		Expect(serviceStatus(sb, "postgres").Data.LastCheckpoint.ID).To(Equal("c1"))
		Expect(serviceStatus(sb, "redis").Data.LastCheckpoint.ID).To(Equal("c1"))
		m := serviceStatus(sb, "mongo").Data
		Expect(m.LastCheckpoint).To(BeNil())
		Expect(m.Error).To(ContainSubstring("mongo cannot checkpoint or restore here"))
		Expect(sim.OpsRun(idsOf(sb)["mongo"], engine.OpCheckpoint)).To(BeZero(), "mongo's checkpoint was tried in its container")
		c := ct.ConditionOf(sb, sandboxv1.ConditionDataRequest)
		Expect(c.Reason).To(Equal(sandboxv1.ReasonDataFailed))
		Expect(c.Message).To(ContainSubstring("reset works"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))

		By("resetting every engine, mongo too")
		requestData(sb, "z1", sandboxv1.DataReset)
		Eventually(dataPhase(sb)).Should(Equal("z1/Succeeded"))
	})

	It("reports the engine's words when a request fails, keeps serving, and takes the next id", func() {
		sb := ct.NewSandbox(ns, "fails", "data-fails", "postgres", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		requestData(sb, "r0", sandboxv1.DataRestore, "redis")
		Eventually(dataPhase(sb)).Should(Equal("r0/Failed"))
		Expect(ct.Get(sb).Status.Data.Message).To(ContainSubstring("no checkpoint named latest in this container"))
		Expect(serviceStatus(sb, "postgres").Data).To(BeNil(), "postgres was not named")

		sim.FailData(engine.OpCheckpoint, `ERROR:  could not write to file "base/16384/2608": No space left on device`)
		requestData(sb, "c1", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb)).Should(Equal("c1/Failed"))
		Expect(ct.ConditionOf(sb, sandboxv1.ConditionDataRequest).Message).To(ContainSubstring("No space left on device"))
		Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		Eventually(ct.EventReasons(sb)).Should(ContainElement(sandboxv1.ReasonDataFailed))

		sim.FailData(engine.OpCheckpoint, "")
		requestData(sb, "c2", sandboxv1.DataCheckpoint)
		Eventually(dataPhase(sb)).Should(Equal("c2/Succeeded"))
	})

	It("tries again when Docker fails the step, without recording the request as failed", func() {
		sb := ct.NewSandbox(ns, "flaky", "data-flaky", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		id := idsOf(sb)["redis"]
		sim.Write(id, "written")
		clear := sim.Inject(fake.Fault{Verb: fake.VerbExec, Ref: id, Err: dd.ErrUnavailable, Times: 2})
		DeferCleanup(clear)
		requestData(sb, "z1", sandboxv1.DataReset)
		Eventually(dataPhase(sb), 30*time.Second).Should(Equal("z1/Succeeded"))
		Expect(sim.Holds(id)).To(BeEmpty())
		Expect(serviceStatus(sb, "redis").Data.Error).To(BeEmpty())
	})

	It("refuses, at the API server, services the Sandbox does not run", func() {
		sb := ct.NewSandbox(ns, "bad", "data-bad", "redis")
		sb.Spec.Data = &sandboxv1.DataRequest{ID: "x", Action: sandboxv1.DataReset, Services: []sandboxv1.Engine{"postgres"}}
		err := k8sClient.Create(ctx, sb)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("data.services must name engines of spec.services"))
		sb.Spec.Data = &sandboxv1.DataRequest{ID: "-x", Action: sandboxv1.DataReset}
		err = k8sClient.Create(ctx, sb)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("data.id must be letters, digits"))
	})
})

// A data request runs beside the passes, as a step in its container: the
// pass starts it and returns; a later pass, woken by its end, records it.
// With one worker, a worker held by a slow step would serve no other Sandbox.
var _ = Describe("Data requests beside the pass (one worker)", func() {
	var (
		sim *ct.EngineSim
		ns  string
	)
	BeforeEach(func() {
		sim = ct.NewHost()
		ns = ct.NewNamespace()
		stop := ct.StartManagerWith(env.Config, sim, ct.Setup{Options: ct.TestOptions(), MaxConcurrentReconciles: 1, Sweep: true,
			HostIdentitySettle: time.Millisecond})
		DeferCleanup(func() { stop() })
	})

	It("reports a slow request Running with its step, serves other Sandboxes meanwhile, and a new request cancels it", func() {
		sb := ct.NewSandbox(ns, "slow", "slow-data", "postgres")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)
		id := serviceStatus(sb, sandboxv1.EnginePostgres).ContainerID
		clear := sim.SlowSteps(ct.SlowStep{ID: "data", For: fake.Forever})
		requestData(sb, "r1", sandboxv1.DataReset)
		Eventually(dataPhase(sb)).Should(Equal("r1/Running"))
		Eventually(func() string { return ct.ConditionOf(sb, sandboxv1.ConditionDataRequest).Message }).Should(
			MatchRegexp(`^Reset r1: waiting for postgres \(reset running \d+s\)$`))
		Expect(sim.RunningSteps(id)).To(HaveLen(1), "the reset runs in its container")

		other := ct.NewSandbox(ns, "other", "plain", "redis")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		Eventually(ct.Condition(other, sandboxv1.ConditionReady)).Should(Equal("True/Ready"))

		clear()
		requestData(sb, "z2", sandboxv1.DataReset)
		Eventually(dataPhase(sb)).Should(Equal("z2/Succeeded"))
		Expect(sim.RunningSteps(id)).To(BeEmpty(), "the stuck reset still runs beside the new one")
		Expect(sim.OpsRun(id, engine.OpReset)).To(Equal(1), "the new reset ran once, the stuck one never")
		Expect(serviceStatus(sb, sandboxv1.EnginePostgres).Data.Running).To(BeEmpty())
	})
})
