package controllers_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// dockerTestLabel marks everything the real-Docker specs create, with the run's ID,
// so cleanup finds it (the driver contract suite's label).
const dockerTestLabel = "sandbox.roboco.io/test"

// realDocker is the Docker engine of the environment: a raw client for the specs'
// own housekeeping, the run's ID, and the local redis test image.
type realDocker struct {
	cli   *client.Client
	runID string
	redis string
}

// newRealDocker connects to the engine; it skips the spec only when
// SANDBOX_SKIP_DOCKER=1 (a missing engine is a failure). Everything labelled with
// the run's ID is removed, with its volumes, when the spec ends.
func newRealDocker() *realDocker {
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		Skip("SANDBOX_SKIP_DOCKER=1: not testing against a Docker engine")
	}
	cli, err := client.New(client.FromEnv)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cli.Close)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	Expect(err).NotTo(HaveOccurred(), "no Docker engine (hack/ensure-docker.sh starts one; SANDBOX_SKIP_DOCKER=1 skips)")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	img, err := testenv.EngineImages()
	Expect(err).NotTo(HaveOccurred())
	rd := &realDocker{cli: cli, runID: hex.EncodeToString(b), redis: img.Plain["redis"]}
	Expect(rd.redis).NotTo(BeEmpty(), "hack/images.sh --print names no REDIS_IMAGE")
	DeferCleanup(rd.cleanup)
	return rd
}

func (rd *realDocker) labelled(extra map[string]string) map[string]string {
	labels := map[string]string{dockerTestLabel: rd.runID}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// list returns the IDs of the containers carrying labels, in any state.
func (rd *realDocker) list(labels map[string]string) []string {
	f := client.Filters{}
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	res, err := rd.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	Expect(err).NotTo(HaveOccurred())
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func (rd *realDocker) cleanup() {
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := rd.list(map[string]string{dockerTestLabel: rd.runID})
	ids = append(ids, rd.list(map[string]string{shost.LabelOwner: "sbx-owner-" + rd.runID})...)
	// Note: pool members carry their instance, not the run's label.
	ids = append(ids, rd.list(map[string]string{shost.LabelInstance: "test-" + rd.runID})...)
	for _, id := range ids {
		if _, err := rd.cli.ContainerRemove(cctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			GinkgoWriter.Printf("cleanup: removing %s: %v\n", id, err)
		}
	}
}

func (rd *realDocker) volumeExists(name string) bool {
	_, err := rd.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return false
	}
	Expect(err).NotTo(HaveOccurred())
	return true
}

// realOptions run the engines' local test images on Docker's default bridge.
//
// Note: the sweep is scoped to this run's label. The engine is shared (by other
// test runs, the demo): an unscoped sweep of this spec's control plane would take
// every other control plane's containers for orphans and reap them.
func realOptions(rd *realDocker, grace time.Duration) controllers.Options {
	o := controllers.DefaultOptions()
	o.GracePeriod = grace
	o.StopTimeout = 2 * time.Second
	o.Images = map[string]engine.Images{"redis": {Default: rd.redis}}
	o.SweepSelector = map[string]string{dockerTestLabel: rd.runID}
	o.Instance = "test-" + rd.runID
	return o
}

var _ = Describe("Lifetime on the real Docker engine", Label("docker"), func() {
	It("deletes a Sandbox whose owner container is removed, leaving no container or volume, within grace + seconds", func() {
		const grace = 3 * time.Second
		rd := newRealDocker()
		driver, err := dd.New()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		startManager(driver, realOptions(rd, grace))
		ns := newNamespace()

		By("starting a stand-in agent container and a Sandbox owned by it")
		owner := "sbx-owner-" + rd.runID
		Expect(driver.PullImage(ctx, rd.redis, nil)).To(Succeed())
		_, err = driver.CreateContainer(ctx, dd.ContainerSpec{Name: owner, Image: rd.redis, Cmd: []string{"sleep", "infinity"},
			Labels: rd.labelled(nil), OwnerLabel: dockerTestLabel, MemoryBytes: 64 << 20,
			Tmpfs: map[string]string{"/data": ""}}) // no anonymous volume for the image's VOLUME: docker rm -f would leave it
		Expect(err).NotTo(HaveOccurred())
		sb := newSandbox(ns, "real-owner", "own-"+rd.runID, "redis")
		sb.Spec.Owner = &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyContainer, ContainerName: owner,
			GracePeriod: &metav1.Duration{Duration: grace}}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		Eventually(condition(sb, sandboxv1.ConditionReady), 2*time.Minute, 200*time.Millisecond).Should(Equal("True/Ready"))
		Expect(condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("True/Running"))
		uid := string(get(sb).UID)
		ids := rd.list(map[string]string{shost.LabelUID: uid})
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
		out, err := exec.Command("docker", "rm", "-f", owner).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		removed := time.Now()
		Eventually(condition(sb, sandboxv1.ConditionOwnerAlive), "2s", "20ms").Should(Equal("False/Missing"))
		since := missingSince(sb).Time

		var containersGone time.Time
		Eventually(func() []string {
			left := rd.list(map[string]string{shost.LabelUID: uid})
			if len(left) == 0 && containersGone.IsZero() {
				containersGone = time.Now()
			}
			return left
		}, grace+15*time.Second, 20*time.Millisecond).Should(BeEmpty())
		Eventually(gone(sb), "10s").Should(BeTrue())
		for _, v := range volumes {
			Expect(rd.volumeExists(v)).To(BeFalse(), "volume %s left behind", v)
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
		rd := newRealDocker()
		calls := testenv.CountDockerCalls(GinkgoT(), rd.cli.DaemonHost())
		driver, err := dd.New(dd.WithHost(calls.Host))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(driver.Close)
		Expect(driver.PullImage(ctx, rd.redis, nil)).To(Succeed())

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
				_, err := rd.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
					Name: fmt.Sprintf("sbx-bench-%s-%d", rd.runID, i),
					Config: &container.Config{Image: rd.redis, Labels: rd.labelled(map[string]string{
						shost.LabelSandbox: "1", shost.LabelOwner: "sbx-owner-" + rd.runID,
						shost.LabelNamespace: "bench", shost.LabelName: fmt.Sprintf("bench-%d", i),
						shost.LabelUID: string(uuid.NewUUID()), shost.LabelEngine: "redis",
						shost.LabelInstance: "test-" + rd.runID})},
				})
				Expect(err).NotTo(HaveOccurred())
			})
		}
		wg.Wait()
		GinkgoWriter.Printf("created %d containers in %s\n", n, time.Since(created).Round(time.Millisecond))

		By("sweeping with a grace period nothing reaches: the cost of looking")
		opts := realOptions(rd, time.Hour)
		opts.SweepInterval = 500 * time.Millisecond
		stop := startManager(driver, opts)
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
		opts = realOptions(rd, time.Second)
		opts.SweepInterval = time.Hour
		startManager(driver, opts)
		Eventually(func() float64 { c, _ := histogram("sandbox_sweep_duration_seconds"); return c }, "2m").Should(BeNumerically(">", count3))
		_, sum4 := histogram("sandbox_sweep_duration_seconds")
		Expect(rd.list(map[string]string{dockerTestLabel: rd.runID, shost.LabelSandbox: "1"})).To(BeEmpty())
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
