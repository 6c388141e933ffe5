package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var (
	// env is this test binary's control plane: one per suite, so suites of
	// several packages run side by side (go test runs packages in parallel), each
	// on its own ports and etcd.
	env *testenv.Env
	// k8sClient is not cached: assertions read what the API server has.
	k8sClient client.Client
	ctx       = context.Background()
	scheme    = controllers.NewScheme()
)

// RunSuite runs the package's specs with the suites' default waits: an
// Eventually's deadline holds at a load of 10 on 2 cores.
func RunSuite(t *testing.T, description string) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	gomega.SetDefaultEventuallyTimeout(20 * time.Second)
	gomega.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ginkgo.RunSpecs(t, description)
}

// StartControlPlane is a suite's BeforeSuite: it starts etcd and kube-apiserver
// with the CRDs installed. Without their binaries ($KUBEBUILDER_ASSETS, or a
// build under bin/k8s) the suite fails, naming what to run: it never skips.
func StartControlPlane() {
	ctrl.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = testenv.Start()
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "no control plane for the suite: $KUBEBUILDER_ASSETS names none, or unset and none built under bin/k8s (run `make envtest`)")
	k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// StopControlPlane is a suite's AfterSuite.
func StopControlPlane() {
	if env != nil {
		gomega.Expect(env.Stop()).To(gomega.Succeed())
	}
}

// Env is the suite's control plane.
func Env() *testenv.Env { return env }

// Client is a client of the suite's control plane that reads the API server, not a cache.
func Client() client.Client { return k8sClient }

// Ctx is the suites' context.
func Ctx() context.Context { return ctx }

// Scheme is the scheme the manager serves.
func Scheme() *runtime.Scheme { return scheme }
