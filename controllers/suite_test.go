package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client // not cached: assertions read what the API server has
	scheme    = controllers.NewScheme()
	ctx       context.Context
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Sandbox reconciler")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx = context.Background()
	var err error
	env, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// startManager runs a manager with the Sandbox reconciler and the orphan sweep on
// driver until the returned stop is called (or the spec ends), as cmd/manager
// wires it.
func startManager(driver dd.Driver, opts controllers.Options) (stop func()) {
	return startManagerOn(env.Config, driver, opts)
}

// startManagerOn is startManager against the control plane at cfg.
func startManagerOn(cfg *rest.Config, driver dd.Driver, opts controllers.Options) (stop func()) {
	return startManagerWith(cfg, driver, controllers.Setup{Options: opts, Sweep: true, HostIdentitySettle: time.Millisecond})
}

// startManagerWith is startManagerOn with the wiring setup says.
func startManagerWith(cfg *rest.Config, driver dd.Driver, setup controllers.Setup) (stop func()) {
	return startManagerCached(cfg, driver, setup, controllers.CacheOptions())
}

// startManagerCached is startManagerWith on a cache of cacheOpts.
func startManagerCached(cfg *rest.Config, driver dd.Driver, setup controllers.Setup, cacheOpts cache.Options) (stop func()) {
	return startManagerClient(cfg, driver, setup, cacheOpts, nil)
}

// startManagerClient is startManagerCached whose manager's client is made by
// newClient (nil: controller-runtime's).
func startManagerClient(cfg *rest.Config, driver dd.Driver, setup controllers.Setup, cacheOpts cache.Options, newClient client.NewClientFunc) (stop func()) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cacheOpts,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  newClient,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(setup.AddToManager(mgr, driver)).To(Succeed())
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			Eventually(done, 30*time.Second).Should(BeClosed())
		}
	}
	DeferCleanup(stop)
	return stop
}
