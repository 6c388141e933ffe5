package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// controlPlane starts envtest and a manager running the Sandbox reconciler against
// the real Docker engine with the local engine images on a test network.
type controlPlane struct {
	client  client.Client
	network string
	resync  time.Duration
	config  *rest.Config
	options controllers.Options
}

func startControlPlane(t *testing.T, h *host) *controlPlane {
	t.Helper()
	return startControlPlaneWith(t, h, h.driver)
}

// startControlPlaneWith runs the reconciler on driver (e.g. a counting wrapper of h's).
func startControlPlaneWith(t *testing.T, h *host, driver dd.Driver) *controlPlane {
	t.Helper()
	cp := newControlPlane(t, h)
	cp.start(t, driver)
	return cp
}

// newControlPlane starts envtest with the namespace "it", and settles the
// manager's options; no manager runs yet (start).
func newControlPlane(t *testing.T, h *host) *controlPlane {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(env.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}

	img := images(t)
	opts := controllers.DefaultOptions()
	opts.DefaultNetwork = h.network(t)
	opts.StopTimeout = 5 * time.Second
	opts.Instance = "it-" + runID // the host is shared: never judge another control plane's containers
	// Note: the sweep judges only this run's containers; legacy ones of other suites are not ours to reap.
	opts.SweepSelector = map[string]string{shost.LabelInstance: opts.Instance}
	opts.Images = map[string]engine.Images{}
	for name, ref := range img.Plain {
		opts.Images[name] = engine.Images{Default: ref, KitchenSink: img.KitchenSink[name]}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "it"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return &controlPlane{client: c, network: opts.DefaultNetwork, resync: opts.ResyncPeriod, config: env.Config, options: opts}
}

// start runs a manager with cp's options on driver until the test ends.
func (cp *controlPlane) start(t *testing.T, driver dd.Driver) {
	t.Helper()
	mgr, err := ctrl.NewManager(cp.config, ctrl.Options{
		Scheme:     controllers.NewScheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (controllers.Setup{Options: cp.options, Sweep: true}).AddToManager(mgr, driver); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// TestSandboxOnRealDocker: a postgres+redis Sandbox becomes Ready on the real engine,
// the Secret's credentials connect, and deleting it leaves no container or volume.
func TestSandboxOnRealDocker(t *testing.T) {
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		t.Skip("SANDBOX_SKIP_DOCKER=1")
	}
	h := newHost(t)
	cp := startControlPlane(t, h)
	ctx := context.Background()
	volumesBefore := testenv.DanglingVolumes(t)

	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "it", Name: "real"},
		Spec: sandboxv1.SandboxSpec{AgentID: "it-" + runID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{{Engine: "postgres"}, {Engine: "redis"}}},
	}
	created := time.Now()
	if err := cp.client.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	got := &sandboxv1.Sandbox{}
	testenv.WaitFor(t, 3*time.Minute, poll, "Ready", func() bool {
		if err := cp.client.Get(ctx, client.ObjectKeyFromObject(sb), got); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)
	})
	t.Logf("create → Ready: %s", time.Since(created).Round(time.Millisecond))

	secret := &corev1.Secret{}
	if err := cp.client.Get(ctx, client.ObjectKey{Namespace: "it", Name: got.Status.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	for _, s := range got.Status.Services {
		e, _ := engine.Lookup(string(s.Engine))
		c, err := h.driver.Inspect(ctx, s.ContainerID)
		if err != nil {
			t.Fatal(err)
		}
		if s.Host != c.Name {
			t.Errorf("%s: published host %q, want the container name %q (its alias on %s)", s.Engine, s.Host, c.Name, cp.network)
		}
		// The host's tests resolve no Docker DNS: connect to the address behind the name.
		connect(t, e, c.Networks[cp.network].IPAddress, string(secret.Data[e.PasswordKey()]))
	}

	if err := cp.client.Delete(ctx, sb); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, poll, "the Sandbox to be gone", func() bool {
		return client.IgnoreNotFound(cp.client.Get(ctx, client.ObjectKeyFromObject(sb), got)) == nil &&
			cp.client.Get(ctx, client.ObjectKeyFromObject(sb), got) != nil
	})
	if left := h.leftovers(t, map[string]string{shost.LabelUID: string(got.UID)}); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	testenv.NoVolumesLeaked(t, volumesBefore)
}

// TestSandboxFeaturesOnRealDocker: features select the kitchen-sink images, are
// activated inside the containers and verified by the engines' static queries.
func TestSandboxFeaturesOnRealDocker(t *testing.T) {
	h := newHost(t)
	cp := startControlPlane(t, h)
	ctx := context.Background()
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "it", Name: "features"},
		Spec: sandboxv1.SandboxSpec{AgentID: "itf-" + runID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{
				{Engine: "postgres", Features: []sandboxv1.Feature{"vector", "postgis", "pg_trgm", "citext", "uuid-ossp"}},
				// Note: Debian has RediSearch only; json and bloom need redis-stack's image.
				{Engine: "redis", Features: []sandboxv1.Feature{"search"}},
			}},
	}
	if err := cp.client.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	got := &sandboxv1.Sandbox{}
	testenv.WaitFor(t, 3*time.Minute, poll, "Ready", func() bool {
		return cp.client.Get(ctx, client.ObjectKeyFromObject(sb), got) == nil &&
			meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)
	})
	kitchen := images(t).KitchenSink
	for _, s := range got.Status.Services {
		if s.Image != kitchen[string(s.Engine)] {
			t.Errorf("%s runs %s, want the kitchen-sink image %s", s.Engine, s.Image, kitchen[string(s.Engine)])
		}
	}
	if f := got.Status.Services[0].Features; len(f) != 5 {
		t.Errorf("postgres features verified: %v", f)
	}
	if f := got.Status.Services[1].Features; len(f) != 1 || f[0] != "search" {
		t.Errorf("redis features verified: %v", f)
	}
	if err := cp.client.Delete(ctx, sb); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, poll, "the Sandbox to be gone", func() bool {
		return cp.client.Get(ctx, client.ObjectKeyFromObject(sb), got) != nil
	})
}

// TestPublishedHostResolvesOnRealDocker: an agent on the service network reaches each
// service by the Secret's HOST, for a short agentID and for the longest the API
// allows (whose container name is longer than a DNS label).
func TestPublishedHostResolvesOnRealDocker(t *testing.T) {
	h := newHost(t)
	cp := startControlPlane(t, h)
	ctx := context.Background()
	agentIDs := map[string]string{
		"short": "its-" + runID,
		"long":  "itl-" + runID + "-" + strings.Repeat("x", 63-len("itl-"+runID+"-")),
	}
	for name, agentID := range agentIDs {
		sb := &sandboxv1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: "it", Name: name},
			Spec: sandboxv1.SandboxSpec{AgentID: agentID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
				Services: []sandboxv1.ServiceSpec{{Engine: "redis"}}},
		}
		if err := cp.client.Create(ctx, sb); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.client.Delete(ctx, sb)
			testenv.WaitFor(t, time.Minute, poll, "Sandbox "+name+" to be gone", func() bool {
				return cp.client.Get(ctx, client.ObjectKeyFromObject(sb), &sandboxv1.Sandbox{}) != nil
			})
		})
	}
	for name, agentID := range agentIDs {
		got := &sandboxv1.Sandbox{}
		testenv.WaitFor(t, 3*time.Minute, poll, name+" Ready", func() bool {
			return cp.client.Get(ctx, client.ObjectKey{Namespace: "it", Name: name}, got) == nil &&
				meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)
		})
		secret := &corev1.Secret{}
		if err := cp.client.Get(ctx, client.ObjectKey{Namespace: "it", Name: got.Status.SecretName}, secret); err != nil {
			t.Fatal(err)
		}
		svc := got.Status.Services[0]
		host := string(secret.Data["ROBOCO_TEST_REDIS_HOST"])
		if host != svc.Host {
			t.Errorf("%s: the Secret publishes %q, status %q", name, host, svc.Host)
		}
		// The service's own container is on the network and resolves through Docker's
		// DNS with glibc, as an agent's client would.
		res, err := h.driver.Exec(ctx, svc.ContainerID, dd.ExecSpec{
			Cmd:     []string{"redis-cli", "-h", host, "-p", string(secret.Data["ROBOCO_TEST_REDIS_PORT"]), "ping"},
			Env:     map[string]string{"REDISCLI_AUTH": string(secret.Data["ROBOCO_TEST_REDIS_PASSWORD"])},
			Timeout: 10 * time.Second,
		})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "PONG" {
			t.Errorf("agentID %s (%d characters): redis-cli -h %s: exit %d err %v: %s %s",
				agentID, len(agentID), host, res.ExitCode, err, res.Stdout, res.Stderr)
		}
	}
}
