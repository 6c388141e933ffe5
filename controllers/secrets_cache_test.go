package controllers_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

var _ = Describe("The manager's cache of Secrets", func() {
	It("holds no Secret's data, so a tenant's labelled Secrets cost the manager their metadata only", func() {
		var mu sync.Mutex
		var informers []string
		opts := ct.CacheOptions()
		opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			mu.Lock()
			name := fmt.Sprintf("%T", obj)
			if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
				name += " " + p.Kind
			}
			informers = append(informers, name)
			mu.Unlock()
			return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		}
		started := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), informers...)
		}
		host, ns := ct.NewHost(), ct.NewNamespace()
		ct.StartManagerCached(env.Config, host, ct.Setup{Options: ct.TestOptions(), Sweep: true, HostIdentitySettle: time.Millisecond}, opts)
		sb := ct.NewSandbox(ns, "meta", "meta-1", "redis")
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		ct.WaitReady(sb)

		By("a tenant's Secret carrying the manager's label, with a payload")
		tenant := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ct.NewNamespace(), Name: "big",
			Labels: map[string]string{ct.SecretLabel: "x"}}, Data: map[string][]byte{"blob": make([]byte, 512<<10)}}
		Expect(k8sClient.Create(ctx, tenant)).To(Succeed())

		By("a credentials Secret deleted by hand is still re-made at once (the metadata watch sees it)")
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "meta-sandbox"}})).To(Succeed())
		Eventually(ct.EventReasons(sb)).Should(ContainElement("SecretRecreated"))
		ct.WaitReady(sb)
		Expect(ct.SecretOf(sb)).To(HaveKey("ROBOCO_TEST_REDIS_PASSWORD"))
		Expect(started()).To(ContainElement("*v1.PartialObjectMetadata Secret"), "Secrets are watched as metadata")
		Expect(started()).NotTo(ContainElement("*v1.Secret"), "an informer of whole Secrets (their data) was started")
	})
})
