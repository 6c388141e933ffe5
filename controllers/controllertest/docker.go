package controllertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// DockerTestLabel marks everything the real-Docker specs create, with the run's ID,
// so cleanup finds it (the driver contract suite's label).
const DockerTestLabel = "sandbox.roboco.io/test"

// RealDocker is the Docker engine of the environment: a raw client for the specs'
// own housekeeping, the run's ID, and the local redis test image.
type RealDocker struct {
	Cli   *client.Client
	RunID string
	Redis string
}

// NewRealDocker connects to the engine; it skips the spec only when
// SANDBOX_SKIP_DOCKER=1 (a missing engine is a failure). Everything labelled with
// the run's ID is removed, with its volumes, when the spec ends.
func NewRealDocker() *RealDocker {
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		ginkgo.Skip("SANDBOX_SKIP_DOCKER=1: not testing against a Docker engine")
	}
	cli, err := client.New(client.FromEnv)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(cli.Close)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "no Docker engine (hack/ensure-docker.sh starts one; SANDBOX_SKIP_DOCKER=1 skips)")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	img, err := testenv.EngineImages()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	rd := &RealDocker{Cli: cli, RunID: hex.EncodeToString(b), Redis: img.Plain["redis"]}
	gomega.Expect(rd.Redis).NotTo(gomega.BeEmpty(), "hack/images.sh --print names no REDIS_IMAGE")
	ginkgo.DeferCleanup(rd.cleanup)
	return rd
}

// Labelled is extra with the run's label.
func (rd *RealDocker) Labelled(extra map[string]string) map[string]string {
	labels := map[string]string{DockerTestLabel: rd.RunID}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// List returns the IDs of the containers carrying labels, in any state.
func (rd *RealDocker) List(labels map[string]string) []string {
	f := client.Filters{}
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	res, err := rd.Cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func (rd *RealDocker) cleanup() {
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := rd.List(map[string]string{DockerTestLabel: rd.RunID})
	ids = append(ids, rd.List(map[string]string{shost.LabelOwner: "sbx-owner-" + rd.RunID})...)
	// Note: pool members carry their instance, not the run's label.
	ids = append(ids, rd.List(map[string]string{shost.LabelInstance: "test-" + rd.RunID})...)
	for _, id := range ids {
		if _, err := rd.Cli.ContainerRemove(cctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			ginkgo.GinkgoWriter.Printf("cleanup: removing %s: %v\n", id, err)
		}
	}
}

// VolumeExists says whether the Docker volume name exists.
func (rd *RealDocker) VolumeExists(name string) bool {
	_, err := rd.Cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return false
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return true
}

// RealOptions run the engines' local test images on Docker's default bridge.
//
// Note: the sweep is scoped to this run's label. The engine is shared (by other
// test runs, the demo): an unscoped sweep of this spec's control plane would take
// every other control plane's containers for orphans and reap them.
func RealOptions(rd *RealDocker, grace time.Duration) Options {
	o := controllers.DefaultOptions()
	o.GracePeriod = grace
	o.StopTimeout = 2 * time.Second
	o.Images = map[string]engine.Images{"redis": {Default: rd.Redis}}
	o.SweepSelector = map[string]string{DockerTestLabel: rd.RunID}
	o.Instance = "test-" + rd.RunID
	return o
}
