package sandbox_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// laggingClient is the manager's client, for one Sandbox: its status writes
// fail until one has failed and it was read again, and from that failure until
// a status write of it succeeds its reads (the cache's) return it as first
// read: a cache that has not caught up with the manager's own writes.
type laggingClient struct {
	client.Client
	key client.ObjectKey

	mu                      sync.Mutex
	first                   *sandboxv1.Sandbox
	failing, failed, behind bool
}

func newLaggingClient(key client.ObjectKey) (*laggingClient, client.NewClientFunc) {
	lc := &laggingClient{key: key, failing: true}
	return lc, func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.New(cfg, opts)
		lc.Client = c
		return lc, err
	}
}

func (lc *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if !ok || key != lc.key {
		return lc.Client.Get(ctx, key, obj, opts...)
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.failed {
		lc.failing = false
	}
	if lc.behind {
		lc.first.DeepCopyInto(sb)
		return nil
	}
	err := lc.Client.Get(ctx, key, obj, opts...)
	if err == nil && lc.first == nil {
		lc.first = sb.DeepCopy()
	}
	return err
}

func (lc *laggingClient) Status() client.SubResourceWriter {
	return laggingStatus{SubResourceWriter: lc.Client.Status(), lc: lc}
}

type laggingStatus struct {
	client.SubResourceWriter
	lc *laggingClient
}

func (s laggingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := obj.(*sandboxv1.Sandbox); !ok || client.ObjectKeyFromObject(obj) != s.lc.key {
		return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	}
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	if s.lc.failing {
		s.lc.failed, s.lc.behind = true, true
		return apierrors.NewServiceUnavailable("injected: the status write failed")
	}
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil {
		s.lc.behind = false
	}
	return err
}

// The reconciler's memory of a Sandbox as its last write left it stands in for
// a cache that lags behind that write; it must hold only what the API server
// took.
var _ = Describe("Status memory", func() {
	It("publishes all a pass learned after its status write failed, while the cache lags behind the manager's writes", func() {
		host := ct.NewHost()
		host.AddImage("redis:8-alpine", ct.UpstreamImages["redis:8-alpine"]) // its pass after the failure makes it Ready
		ns := ct.NewNamespace()
		sb := ct.NewSandbox(ns, "lagging", "lagging-1", "redis")
		// Note: pinned, so that the host's first pass writes the finalizer (placement did not):
		// a write of the pass that succeeds before its status writes fail.
		sb.Spec.DockerHost = ct.DefaultDockerHostName
		lc, newClient := newLaggingClient(client.ObjectKeyFromObject(sb))
		ct.StartManagerClient(env.Config, host, ct.Setup{Options: ct.TestOptions(), Sweep: true, HostIdentitySettle: time.Millisecond}, ct.CacheOptions(), newClient)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())

		ct.WaitReady(sb)
		lc.mu.Lock()
		Expect(lc.failed).To(BeTrue(), "no status write failed: the spec tested nothing")
		lc.mu.Unlock()
		got := ct.Get(sb)
		Expect(got.Status.DockerHost).NotTo(BeNil(), "Ready, and its status does not say which Docker host it is bound to")
		Expect(ct.Condition(sb, sandboxv1.ConditionOwnerAlive)()).To(Equal("True/NoOwner"))
	})
})
