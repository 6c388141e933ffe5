package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// replica runs a manager with no Docker host of its own that shares the
// registered ones with other replicas through Leases in leaseNS, each held for
// duration unless renewed.
func replica(leaseNS, identity string, hosts map[string]*ct.EngineSim, duration time.Duration) (stop func()) {
	return replicaClient(leaseNS, identity, hosts, duration, nil)
}

// replicaClient is replica whose manager's client is made by newClient (nil:
// controller-runtime's).
func replicaClient(leaseNS, identity string, hosts map[string]*ct.EngineSim, duration time.Duration, newClient client.NewClientFunc) (stop func()) {
	dial := func(_ context.Context, h *sandboxv1.DockerHost) (dd.Driver, error) {
		for name, sim := range hosts {
			if h.Spec.Endpoint == "unix:///fake/"+name {
				return sim, nil
			}
		}
		return nil, fmt.Errorf("no fake at %s", h.Spec.Endpoint)
	}
	return ct.StartManagerClient(env.Config, nil, ct.Setup{Options: ct.TestOptions(), Sweep: true,
		HostIdentitySettle: time.Millisecond, Dial: dial,
		Leases: &ct.HostLeases{Namespace: leaseNS, Identity: identity, Duration: duration, RetryPeriod: 200 * time.Millisecond}},
		ct.CacheOptions(), newClient)
}

// leasesIn describes the Leases in ns (name: holder), for a failure's message.
func leasesIn(ns string) func() string {
	return func() string {
		var list coordv1.LeaseList
		if err := k8sClient.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		var out []string
		for _, l := range list.Items {
			out = append(out, l.Name+": "+ptr.Deref(l.Spec.HolderIdentity, ""))
		}
		return "Leases " + strings.Join(out, ", ")
	}
}

func managerOf(name string) func() string {
	return func() string { return ct.DockerHost(name).Status.Manager }
}

var _ = Describe("Replicas sharing the Docker hosts", func() {
	It("drives each host from one replica, and hands a stopped replica's host to another", func() {
		ns, leaseNS := ct.NewNamespace(), ct.NewNamespace()
		b, c := ct.NewHost(), ct.NewHost()
		ct.RegisterHost("share-b", nil, nil)
		ct.RegisterHost("share-c", nil, nil)
		ct.RegisterHost("share-a", nil, nil) // a host neither replica can dial: it still counts in the share
		hosts := map[string]*ct.EngineSim{"share-b": b, "share-c": c}
		stops := map[string]func(){"r1": replica(leaseNS, "r1", hosts, 2*time.Second), "r2": replica(leaseNS, "r2", hosts, 2*time.Second)}

		// Note: the suite's implicit host (local) may exist too: it counts in the shares.
		Eventually(func() map[string]int {
			var list sandboxv1.DockerHostList
			Expect(k8sClient.List(ctx, &list)).To(Succeed())
			held := map[string]int{}
			for _, h := range list.Items {
				held[h.Status.Manager]++
			}
			if share := (len(list.Items) + 1) / 2; held["r1"] > share || held["r2"] > share {
				return map[string]int{"over its share": 1}
			}
			return map[string]int{"r1": min(held["r1"], 1), "r2": min(held["r2"], 1), "": held[""]}
		}).Should(Equal(map[string]int{"r1": 1, "r2": 1, "": 0}), "each replica drives its fair share of the hosts")
		var sbs []*sandboxv1.Sandbox
		for _, h := range []string{"share-b", "share-c"} {
			sb := ct.NewSandbox(ns, "on-"+h, "on-"+h, "redis")
			sb.Spec.DockerHost = h
			Expect(k8sClient.Create(ctx, sb)).To(Succeed())
			sbs = append(sbs, sb)
		}
		for _, sb := range sbs {
			ct.WaitReady(sb)
		}

		holder := managerOf("share-b")()
		survivor := map[string]string{"r1": "r2", "r2": "r1"}[holder]
		stops[holder]()
		Eventually(managerOf("share-b"), 20*time.Second).Should(Equal(survivor), leasesIn(leaseNS))
		Eventually(managerOf("share-c"), 20*time.Second).Should(Equal(survivor), leasesIn(leaseNS))
		late := ct.NewSandbox(ns, "late", "late-1", "redis")
		late.Spec.DockerHost = "share-b"
		Expect(k8sClient.Create(ctx, late)).To(Succeed())
		ct.WaitReady(late)
		for _, sb := range append(sbs, late) {
			Expect(ct.Condition(sb, sandboxv1.ConditionReady)()).To(Equal("True/Ready"))
		}
		Expect(b.Calls(fake.VerbCreateContainer)).To(Equal(2), "one create per Sandbox on share-b: none twice across the handover")
		Expect(c.Calls(fake.VerbCreateContainer)).To(Equal(1))
	})

	It("hands a cleanly stopped replica's hosts to the other at once, not after its Leases expire", func() {
		leaseNS := ct.NewNamespace()
		hosts := map[string]*ct.EngineSim{"quit-b": ct.NewHost(), "quit-c": ct.NewHost()}
		ct.RegisterHost("quit-b", nil, nil)
		ct.RegisterHost("quit-c", nil, nil)
		const long = time.Minute // far longer than the handover may take
		stops := map[string]func(){"r1": replica(leaseNS, "r1", hosts, long), "r2": replica(leaseNS, "r2", hosts, long)}
		Eventually(managerOf("quit-b")).ShouldNot(BeEmpty())
		Eventually(managerOf("quit-c")).ShouldNot(BeEmpty())

		holder := managerOf("quit-b")()
		survivor := map[string]string{"r1": "r2", "r2": "r1"}[holder]
		stops[holder]()
		// The stopped replica frees its host Leases and says it is gone, so the
		// survivor's share is every host again (whichever of them it held before).
		Eventually(managerOf("quit-b"), 15*time.Second).Should(Equal(survivor), leasesIn(leaseNS))
		Eventually(managerOf("quit-c"), 15*time.Second).Should(Equal(survivor), leasesIn(leaseNS))
	})
})
