package fakedocker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// TestManagerOnAFakeHost: the real reconciler, through the real driver, makes
// a Sandbox of every engine Ready on a fake host as the benchmark runs it, and
// removes its containers once it is deleted, with no duplicate create and no
// call the fake does not serve.
func TestManagerOnAFakeHost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a control plane")
	}
	srv := serve(t, fakedocker.New(fakedocker.WithPullAny(), fakedocker.WithAnyNetwork(),
		fakedocker.WithExecHook(fakedocker.EngineAnswers)))
	c := startManager(t, newDriver(t, dd.WithHost(srv.Host())))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fd", Name: "trio"},
		Spec: sandboxv1.SandboxSpec{AgentID: "fd-trio", Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{{Engine: "postgres"}, {Engine: "redis"}, {Engine: "mongo"}}},
	}
	created := time.Now()
	if err := c.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	got := &sandboxv1.Sandbox{}
	testenv.WaitFor(t, time.Minute, 50*time.Millisecond, "Ready", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(sb), got) == nil && meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1.ConditionReady)
	})
	t.Logf("create → Ready: %s", time.Since(created).Round(time.Millisecond))
	if st := srv.Stats(); st.Containers["running"] != 3 || st.Duplicates != 0 {
		t.Errorf("Ready: containers %v, duplicates %d; want 3 running, none", st.Containers, st.Duplicates)
	}
	if err := c.Delete(ctx, sb); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, 50*time.Millisecond, "containers removed", func() bool {
		return len(srv.Stats().Containers) == 0
	})
	st := srv.Stats()
	if st.Creates != 3 || st.Duplicates != 0 || st.Requests["/"] != 0 {
		t.Errorf("creates %d, duplicates %d, requests the fake does not serve %d; want 3, 0, 0", st.Creates, st.Duplicates, st.Requests["/"])
	}
	t.Logf("requests: %v", st.Requests)
}

// startManager runs a control plane and a manager on driver until the test ends.
func startManager(t *testing.T, driver dd.Driver) client.Client {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(env.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fd"}}); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: controllers.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	opts := controllers.DefaultOptions()
	opts.DefaultNetwork, opts.Instance = "sandboxes", "fd"
	if err := (controllers.Setup{Options: opts, Sweep: true}).AddToManager(mgr, driver); err != nil {
		t.Fatal(fmt.Errorf("setup: %w", err))
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
	return c
}
