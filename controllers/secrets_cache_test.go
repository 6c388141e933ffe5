package controllers_test

import (
	"fmt"
	"strings"
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
	It("keeps no tenant payload in what it watches as metadata: a ConfigMap's annotations, a Secret's kubectl apply copy", func() {
		var mu sync.Mutex
		stores := map[string]toolscache.Store{}
		opts := ct.CacheOptions()
		opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			inf := toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
			if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
				mu.Lock()
				stores[p.Kind] = inf.GetStore()
				mu.Unlock()
			}
			return inf
		}
		host, ns := ct.NewHost(), ct.NewNamespace()
		ct.StartManagerCached(env.Config, host, ct.Setup{Options: ct.TestOptions(), Sweep: true, HostIdentitySettle: time.Millisecond}, opts)
		big := strings.Repeat("x", 100<<10)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "notes", Annotations: map[string]string{"tenant/blob": big}},
			Data: map[string]string{"keys.redis": "SET a 1"}}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "applied", Labels: map[string]string{ct.SecretLabel: "x"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": big, "team": "a"}}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())

		cached := func(kind, name string) func() map[string]string {
			return func() map[string]string {
				mu.Lock()
				store := stores[kind]
				mu.Unlock()
				if store == nil {
					return map[string]string{"no informer": kind}
				}
				obj, ok, err := store.GetByKey(ns + "/" + name)
				if err != nil || !ok {
					return map[string]string{"not cached": name}
				}
				return obj.(*metav1.PartialObjectMetadata).Annotations
			}
		}
		Eventually(cached("ConfigMap", "notes")).Should(BeEmpty())
		Eventually(cached("Secret", "applied")).Should(Equal(map[string]string{"team": "a"}))
	})
})
