package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var _ = Describe("Lifetime on the real Docker engine", Label("docker"), func() {
	It("deletes a Sandbox whose owner container is removed, leaving no container or volume, within grace + seconds", func() {
		const grace = 3 * time.Second
		rd := ct.NewRealDocker()
		driver, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		passes := ct.NewPasses()
		ct.StartManagerObserved(driver, ct.RealOptions(rd, grace), passes)
		ns := ct.NewNamespace()

		By("starting a stand-in agent container and a Sandbox owned by it")
		owner := "sbx-owner-" + rd.RunID
		Expect(driver.PullImage(ctx, rd.Redis, nil)).To(Succeed())
		_, err = driver.CreateContainer(ctx, dd.ContainerSpec{Name: owner, Image: rd.Redis, Cmd: []string{"sleep", "infinity"},
			Labels: rd.Labelled(nil), OwnerLabel: ct.DockerTestLabel, MemoryBytes: 64 << 20,
			Tmpfs: map[string]string{"/data": ""}}) // no anonymous volume for the image's VOLUME: docker rm -f would leave it
		Expect(err).NotTo(HaveOccurred())
		sb := ct.NewSandbox(ns, "real-owner", "own-"+rd.RunID, "redis")
		sb.Spec.Owner = &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyContainer, ContainerName: owner,
			GracePeriod: &metav1.Duration{Duration: grace}}
		passes.Follow(sb, ct.Condition(sb, sandboxv1.ConditionOwnerAlive))
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(ct.Condition(sb, sandboxv1.ConditionReady), 2*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		Expect(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("True/Running"))
		uid := string(ct.Get(sb).UID)
		ids := rd.List(map[string]string{shost.LabelUID: uid})
		Expect(ids).To(HaveLen(1))
		var volumes []string
		for _, id := range ids {
			c, err := driver.Inspect(ctx, id)
			Expect(err).NotTo(HaveOccurred())
			for _, m := range c.Mounts {
				if m.Type == "volume" {
					volumes = append(volumes, m.Name)
				}
			}
		}

		By("removing the owner with docker rm -f")
		var removed time.Time
		passes.ByEvent(func() {
			out, err := exec.Command("docker", "rm", "-f", owner).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			removed = time.Now()
		}, "False/Missing")
		since := ct.MissingSince(sb).Time

		var containersGone time.Time
		Eventually(func() []string {
			left := rd.List(map[string]string{shost.LabelUID: uid})
			if len(left) == 0 && containersGone.IsZero() {
				containersGone = time.Now()
			}
			return left
		}, grace+15*time.Second, 20*time.Millisecond).Should(BeEmpty())
		Eventually(ct.Gone(sb), "10s").Should(BeTrue())
		for _, v := range volumes {
			Expect(rd.VolumeExists(v)).To(BeFalse(), "volume %s left behind", v)
		}
		latency := containersGone.Sub(removed) - grace
		AddReportEntry("owner removed → sandbox containers gone, grace subtracted (real Docker)",
			fmt.Sprintf("%s (grace %s; ownerMissingSince %s, %s after the rm returned, rounded up to the second)",
				latency.Round(time.Millisecond), grace, since.UTC().Format(time.RFC3339), since.Sub(removed).Round(time.Millisecond)))
		Expect(containersGone).To(BeTemporally(">=", removed.Add(grace-time.Second)), "the grace period was cut short")
		Expect(latency).To(BeNumerically("<", 5*time.Second))
	})

	It("measures one sweep over 200 labelled containers (SANDBOX_SWEEP_BENCH=1)", Label("bench"), func() {
		if os.Getenv("SANDBOX_SWEEP_BENCH") != "1" {
			Skip("set SANDBOX_SWEEP_BENCH=1 to measure the sweep on the real engine (creates 200 containers)")
		}
		rd := ct.NewRealDocker()
		calls := testenv.CountDockerCalls(GinkgoT(), rd.Cli.DaemonHost())
		driver, err := dd.New(dd.WithHost(calls.Host))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		Expect(driver.PullImage(ctx, rd.Redis, nil)).To(Succeed())

		By("creating 200 containers (never started) labelled as ours, of Sandboxes that do not exist")
		const n = 200
		created := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range n {
			wg.Go(func() {
				defer GinkgoRecover()
				sem <- struct{}{}
				defer func() { <-sem }()
				_, err := rd.Cli.ContainerCreate(ctx, client.ContainerCreateOptions{
					Name: fmt.Sprintf("sbx-bench-%s-%d", rd.RunID, i),
					Config: &container.Config{Image: rd.Redis, Labels: rd.Labelled(map[string]string{
						shost.LabelSandbox: "1", shost.LabelOwner: "sbx-owner-" + rd.RunID,
						shost.LabelNamespace: "bench", shost.LabelName: fmt.Sprintf("bench-%d", i),
						shost.LabelUID: string(uuid.NewUUID()), shost.LabelEngine: "redis",
						shost.LabelInstance: "test-" + rd.RunID})},
				})
				Expect(err).NotTo(HaveOccurred())
			})
		}
		wg.Wait()
		GinkgoWriter.Printf("created %d containers in %s\n", n, time.Since(created).Round(time.Millisecond))

		By("sweeping with a grace period nothing reaches: the cost of looking")
		opts := ct.RealOptions(rd, time.Hour)
		opts.SweepInterval = 500 * time.Millisecond
		stop := ct.StartManager(driver, opts)
		count0, _ := histogram("sandbox_sweep_duration_seconds")
		Eventually(func() float64 { c, _ := histogram("sandbox_sweep_duration_seconds"); return c }).Should(BeNumerically(">", count0))
		calls.Reset()
		count1, sum1 := histogram("sandbox_sweep_duration_seconds")
		Eventually(func() float64 { c, _ := histogram("sandbox_sweep_duration_seconds"); return c }, "30s").Should(BeNumerically(">=", count1+10))
		count2, sum2 := histogram("sandbox_sweep_duration_seconds")
		passes := count2 - count1
		look := fmt.Sprintf("%.1f ms per pass over %.0f passes; API calls per pass: %s",
			(sum2-sum1)/passes*1000, passes, calls.Snapshot().Per(passes))
		stop()

		By("sweeping with a 1s grace period: the cost of reaping all 200")
		Eventually(func() time.Duration { return time.Since(created) }).Should(BeNumerically(">", 2500*time.Millisecond))
		calls.Reset()
		count3, sum3 := histogram("sandbox_sweep_duration_seconds")
		opts = ct.RealOptions(rd, time.Second)
		opts.SweepInterval = time.Hour
		ct.StartManager(driver, opts)
		Eventually(func() float64 { c, _ := histogram("sandbox_sweep_duration_seconds"); return c }, "2m").Should(BeNumerically(">", count3))
		_, sum4 := histogram("sandbox_sweep_duration_seconds")
		Expect(rd.List(map[string]string{ct.DockerTestLabel: rd.RunID, shost.LabelSandbox: "1"})).To(BeEmpty())
		reap := fmt.Sprintf("%.0f ms for the pass; API calls: %s", (sum4-sum3)*1000, calls.Snapshot().Per(1))

		AddReportEntry("sweep over 200 labelled containers (real Docker)", "look only: "+look+"\nreaping all: "+reap)
	})
})

// histogram reads a histogram's sample count and sum from controller-runtime's registry.
func histogram(name string) (count, sum float64) {
	mfs, _ := ctrlmetrics.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			h := mf.GetMetric()[0].GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
	}
	return 0, 0
}
