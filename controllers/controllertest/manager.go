package controllertest

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The face's names the specs use, so that a reconciler package's specs import
// the harness rather than the face that wires them.
type (
	// Options are the operator's settings (the manager's flags).
	Options = controllers.Options
	// Setup is the manager's wiring (cmd/manager's).
	Setup = controllers.Setup
	// HostLeases says how manager replicas share the Docker hosts.
	HostLeases = controllers.HostLeases
)

const (
	// Finalizer holds a Sandbox until its containers are confirmed gone.
	Finalizer = controllers.Finalizer
	// SecretLabel marks the credentials Secrets.
	SecretLabel = controllers.SecretLabel
	// DefaultDockerHostName is the DockerHost of the manager's own Docker host.
	DefaultDockerHostName = controllers.DefaultDockerHostName
)

// CacheOptions are the manager's cache options (cmd/manager's).
func CacheOptions() cache.Options { return controllers.CacheOptions() }

// StartManager runs a manager with the Sandbox reconciler and the orphan sweep on
// driver until the returned stop is called (or the spec ends), as cmd/manager
// wires it.
func StartManager(driver dd.Driver, opts Options) (stop func()) {
	return StartManagerOn(env.Config, driver, opts)
}

// StartManagerOn is StartManager against the control plane at cfg.
func StartManagerOn(cfg *rest.Config, driver dd.Driver, opts Options) (stop func()) {
	return StartManagerWith(cfg, driver, Setup{Options: opts, Sweep: true, HostIdentitySettle: time.Millisecond})
}

// StartManagerWith is StartManagerOn with the wiring setup says.
func StartManagerWith(cfg *rest.Config, driver dd.Driver, setup Setup) (stop func()) {
	return StartManagerCached(cfg, driver, setup, CacheOptions())
}

// StartManagerCached is StartManagerWith on a cache of cacheOpts.
func StartManagerCached(cfg *rest.Config, driver dd.Driver, setup Setup, cacheOpts cache.Options) (stop func()) {
	return StartManagerClient(cfg, driver, setup, cacheOpts, nil)
}

// StartManagerClient is StartManagerCached whose manager's client is made by
// newClient (nil: controller-runtime's).
func StartManagerClient(cfg *rest.Config, driver dd.Driver, setup Setup, cacheOpts cache.Options, newClient client.NewClientFunc) (stop func()) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cacheOpts,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  newClient,
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(setup.AddToManager(mgr, driver)).To(gomega.Succeed())
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(done)
		gomega.Expect(mgr.Start(mctx)).To(gomega.Succeed())
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			gomega.Eventually(done, 30*time.Second).Should(gomega.BeClosed())
		}
	}
	ginkgo.DeferCleanup(stop)
	return stop
}
