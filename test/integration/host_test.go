// Package integration holds the suites that need the real Docker engine and the
// local engine images (built by `make images`, served from the local registry).
package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// testLabel marks everything these suites create, so cleanup finds it.
const testLabel = "sandbox.roboco.io/test"

var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// poll is how often the suites look again while waiting for a state.
const poll = 100 * time.Millisecond

// host is the real Docker engine: our driver plus a raw client for what the
// driver deliberately cannot do (networks, image and volume housekeeping).
type host struct {
	driver *dd.Docker
	cli    *client.Client
}

func newHost(t *testing.T) *host {
	t.Helper()
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1")
	}
	drv, err := dd.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := drv.Ping(ctx); err != nil {
		t.Fatalf("these tests need a Docker engine (make test starts one): %v", err)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return &host{driver: drv, cli: cli}
}

// images are the local engine images (hack/images.sh).
func images(t *testing.T) testenv.Images {
	t.Helper()
	img, err := testenv.EngineImages()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// network creates a labelled user-defined network that lives until the test ends.
func (h *host) network(t *testing.T) string {
	t.Helper()
	name := "sbx-it-" + runID + "-" + strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	if _, err := h.cli.NetworkCreate(context.Background(), name, client.NetworkCreateOptions{
		Driver: "bridge", Labels: map[string]string{testLabel: runID}}); err != nil {
		t.Fatalf("creating network %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := h.cli.NetworkRemove(context.Background(), name, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("removing network %s: %v", name, err)
		}
	})
	return name
}

// forgetImage removes the local tag ref so the next use pulls it from the registry
// (its layers stay, so the pull is quick but real).
func (h *host) forgetImage(t *testing.T, ref string) {
	t.Helper()
	_, err := h.cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{})
	if err != nil && !strings.Contains(err.Error(), "No such image") {
		t.Logf("removing local tag %s: %v (the pull below may find it present)", ref, err)
	}
}

// leftovers lists containers carrying labels.
func (h *host) leftovers(t *testing.T, labels map[string]string) []dd.ContainerSummary {
	t.Helper()
	cs, err := h.driver.List(context.Background(), labels)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
