package crd_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func dockerHost(name, endpoint string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1",
		"kind":       "DockerHost",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"endpoint": endpoint},
	}}
}

var _ = Describe("Placement in the CRD", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("lets spec.dockerHost be set once, then refuses a change or its removal", func() {
		u := sandbox(ns, "placed")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		set(u, "host-a", "spec", "dockerHost")
		Expect(k8sClient.Update(ctx, u)).To(Succeed(), "binding an unbound Sandbox")

		set(u, "host-b", "spec", "dockerHost")
		err := k8sClient.Update(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a move was accepted or wrong error: %v", err)
		Expect(err.Error()).To(ContainSubstring("dockerHost is immutable once set"))

		set(u, "host-a", "spec", "dockerHost")
		unstructured.RemoveNestedField(u.Object, "spec", "dockerHost")
		err = k8sClient.Update(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an unbinding was accepted or wrong error: %v", err)
	})

	It("holds a SandboxPool's dockerHost to the same rule", func() {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "sandbox.roboco.io/v1alpha1", "kind": "SandboxPool",
			"metadata": map[string]any{"name": "pool", "namespace": ns},
			"spec":     map[string]any{"service": map[string]any{"engine": "redis"}, "dockerHost": "host-a"},
		}}
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		set(u, "host-b", "spec", "dockerHost")
		err := k8sClient.Update(ctx, u)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("dockerHost is immutable once set"))
	})

	DescribeTable("refuses a DockerHost that cannot work, saying what is allowed",
		func(endpoint string, mutate func(u *unstructured.Unstructured), want string) {
			u := dockerHost("bad", endpoint)
			if mutate != nil {
				mutate(u)
			}
			err := k8sClient.Create(ctx, u)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "accepted or wrong error: %v", err)
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("an http endpoint", "http://10.0.0.1:2375", nil, "endpoint must be unix:///path/to/docker.sock or tcp://host:port"),
		Entry("TLS on a unix socket", "unix:///var/run/docker.sock", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"secretRef": map[string]any{"namespace": "sandbox-system", "name": "tls"}}, "spec", "tls")
		}, "tls applies to tcp:// endpoints only"),
		Entry("a negative capacity", "unix:///var/run/docker.sock", func(u *unstructured.Unstructured) {
			set(u, int64(-1), "spec", "capacity", "sandboxes")
		}, "spec.capacity.sandboxes"),
	)

	It("accepts a unix and a TLS tcp DockerHost, and a cordon", func() {
		local := dockerHost("placement-local", "unix:///run/docker-b.sock")
		set(local, true, "spec", "unschedulable")
		Expect(k8sClient.Create(ctx, local)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, local) })
		remote := dockerHost("placement-remote", "tcp://docker-b.example:2376")
		set(remote, map[string]any{"secretRef": map[string]any{"namespace": "sandbox-system", "name": "docker-b-tls"}}, "spec", "tls")
		set(remote, int64(40), "spec", "capacity", "sandboxes")
		Expect(k8sClient.Create(ctx, remote)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, remote) })
	})
})
