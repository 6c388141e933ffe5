package sandbox_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// stuckAfter is the test's threshold: a controller whose workers take no item
// for this long while items wait fails /healthz.
const stuckAfter = 2 * time.Second

var _ = Describe("Liveness", func() {
	It("stays healthy while one Sandbox pass runs past the stuck threshold and fails once every worker is held while work waits", func() {
		ns := ct.NewNamespace()
		drv := &holdingDriver{Driver: ct.NewHost(), held: map[string]chan struct{}{}, in: map[string]int{}}
		base := startProbed(drv, ct.Setup{Options: ct.TestOptions(), HostIdentitySettle: time.Millisecond,
			MaxConcurrentReconciles: 2, WorkersStuckAfter: stuckAfter})
		Eventually(healthz(base, "")).Should(Equal("200 ok"))

		By("one pass held past the threshold, the queue empty")
		drv.hold("held-a")
		Expect(k8sClient.Create(ctx, ct.NewSandbox(ns, "held-a", "held-a", "redis"))).To(Succeed())
		Eventually(drv.holding("held-a")).Should(BeTrue())
		Consistently(healthz(base, ""), 3*stuckAfter, 100*time.Millisecond).Should(Equal("200 ok"))

		By("the other worker still serves the other Sandboxes")
		served := ct.NewSandbox(ns, "served", "served", "redis")
		Expect(k8sClient.Create(ctx, served)).To(Succeed())
		ct.WaitReady(served)
		Expect(drv.holding("held-a")()).To(BeTrue())
		Expect(healthz(base, "")()).To(Equal("200 ok"))

		By("every worker held while a Sandbox waits")
		drv.hold("held-c")
		Expect(k8sClient.Create(ctx, ct.NewSandbox(ns, "held-c", "held-c", "redis"))).To(Succeed())
		Eventually(drv.holding("held-c")).Should(BeTrue())
		waiting := ct.NewSandbox(ns, "waiting", "waiting", "redis")
		Expect(k8sClient.Create(ctx, waiting)).To(Succeed())
		Eventually(healthz(base, "")).Should(HavePrefix("500 "))
		Expect(healthz(base, "/workers")()).To(MatchRegexp(`^500 .*controller sandbox: \d+ waiting, no worker took one for \d`))

		By("the workers released, it is healthy again and the waiting Sandbox is served")
		drv.releaseAll()
		Eventually(healthz(base, "")).Should(Equal("200 ok"))
		ct.WaitReady(waiting)
	})
})

// holdingDriver holds the passes of a held Sandbox where each begins (the list
// of its containers) until released: a pass as long as the test wants,
// whatever long wait it stands for. Note: creates no longer hold a pass (they
// go on beside it), so the list is where a pass can still be held.
type holdingDriver struct {
	dd.Driver
	mu   sync.Mutex
	held map[string]chan struct{} // by Sandbox name; closed on release
	in   map[string]int           // passes being held, by Sandbox name
}

func (h *holdingDriver) hold(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[name] = make(chan struct{})
}

func (h *holdingDriver) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, gate := range h.held {
		close(gate)
		delete(h.held, name)
	}
}

// holding says whether a pass of name is held now.
func (h *holdingDriver) holding(name string) func() bool {
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.in[name] > 0
	}
}

func (h *holdingDriver) List(ctx context.Context, labels map[string]string) ([]dd.ContainerSummary, error) {
	name := sandboxNamed(labels[host.LabelUID])
	h.mu.Lock()
	gate := h.held[name]
	h.in[name]++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.in[name]--
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Driver.List(ctx, labels)
}

// sandboxNamed is the name of the Sandbox of uid ("" when none).
func sandboxNamed(uid string) string {
	if uid == "" {
		return ""
	}
	var list sandboxv1.SandboxList
	if err := k8sClient.List(ctx, &list); err != nil {
		return ""
	}
	for _, sb := range list.Items {
		if string(sb.UID) == uid {
			return sb.Name
		}
	}
	return ""
}

// startProbed runs a manager wired as cmd/manager's, serving its health probes,
// until the spec ends; it returns the probes' base URL.
func startProbed(driver dd.Driver, setup ct.Setup) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 ct.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		Cache:                  ct.CacheOptions(),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		HealthProbeBindAddress: addr,
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
	DeferCleanup(func() {
		cancel()
		Eventually(done, 30*time.Second).Should(BeClosed())
	})
	return "http://" + addr + "/healthz"
}

// healthz is "<status code> <body>" of the probe at base+path.
func healthz(base, path string) func() string {
	return func() string {
		resp, err := http.Get(base + path)
		if err != nil {
			return err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status[:3] + " " + string(body)
	}
}
