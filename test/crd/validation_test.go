package crd_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// sandbox returns a minimal valid Sandbox as unstructured data, so tests can also
// send what the Go types could not express (unknown fields, wrong kinds of values).
func sandbox(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sandbox.roboco.io/v1alpha1",
		"kind":       "Sandbox",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"agentID":  "be-dev-1",
			"services": []any{map[string]any{"engine": "postgres"}},
		},
	}}
	return u
}

// seededFor is spec.services: one postgres seeded from a ConfigMap within timeout.
func seededFor(timeout string) []any {
	return []any{map[string]any{"engine": "postgres",
		"init": map[string]any{"configMapRef": map[string]any{"name": "seed"}, "timeout": timeout}}}
}

func set(u *unstructured.Unstructured, value any, path ...string) {
	Expect(unstructured.SetNestedField(u.Object, value, path...)).To(Succeed())
}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "api-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	return ns.Name
}

var _ = Describe("Sandbox validation in the CRD", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	DescribeTable("refuses an invalid Sandbox with a message naming the rule",
		func(mutate func(u *unstructured.Unstructured), wantMessage string) {
			u := sandbox(ns, "invalid")
			mutate(u)
			err := k8sClient.Create(ctx, u)
			Expect(err).To(HaveOccurred(), "the API server accepted it")
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "not an Invalid error: %v", err)
			Expect(err.Error()).To(ContainSubstring(wantMessage))
		},
		Entry("unknown engine", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "mysql"}}, "spec", "services")
		}, `Unsupported value: "mysql": supported values: "postgres", "redis", "mongo"`),
		Entry("duplicate engine", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis"}, map[string]any{"engine": "redis"}}, "spec", "services")
		}, `spec.services[1]: Duplicate value: {"engine":"redis"}`),
		Entry("empty services", func(u *unstructured.Unstructured) {
			set(u, []any{}, "spec", "services")
		}, "spec.services: Invalid value: 0: spec.services in body should have at least 1 items"),
		Entry("missing services", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "services")
		}, "spec.services: Required value"),
		Entry("missing agentID", func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "agentID")
		}, "spec.agentID: Required value"),
		Entry("bad agentID characters", func(u *unstructured.Unstructured) {
			set(u, "Be_Dev.1", "spec", "agentID")
		}, "agentID must consist of lowercase letters, digits and '-', and start and end with a letter or digit"),
		Entry("agentID ending in a dash", func(u *unstructured.Unstructured) {
			set(u, "be-dev-", "spec", "agentID")
		}, "agentID must consist of lowercase letters, digits and '-'"),
		Entry("agentID too long", func(u *unstructured.Unstructured) {
			set(u, strings.Repeat("a", 64), "spec", "agentID")
		}, "spec.agentID: Too long: may not be more than 63 bytes"),
		Entry("name too long for its Secret's name", func(u *unstructured.Unstructured) {
			u.SetName(strings.Repeat("s", 246))
		}, "metadata.name may have at most 245 characters: the credentials Secret is named <name>-sandbox"),
		Entry("feature of another engine", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "postgres", "features": []any{"vector", "search"}}}, "spec", "services")
		}, "postgres features must be among: vector, postgis, pg_trgm, citext, uuid-ossp"),
		Entry("redis asking for a postgres extension", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis", "features": []any{"pg_trgm"}}}, "spec", "services")
		}, "redis features must be among: search, json, bloom"),
		Entry("mongo with any feature", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "mongo", "features": []any{"json"}}}, "spec", "services")
		}, "mongo supports no features"),
		Entry("unknown feature (an untrusted language)", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "postgres", "features": []any{"plpython3u"}}}, "spec", "services")
		}, `Unsupported value: "plpython3u": supported values: "vector", "postgis", "pg_trgm", "citext", "uuid-ossp", "search", "json", "bloom"`),
		Entry("duplicate feature", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "postgres", "features": []any{"vector", "vector"}}}, "spec", "services")
		}, `Duplicate value: "vector"`),
		Entry("unknown update strategy", func(u *unstructured.Unstructured) {
			set(u, "Always", "spec", "updateStrategy")
		}, `supported values: "OnDelete", "RollingUpdate"`),
		Entry("negative ttl", func(u *unstructured.Unstructured) {
			set(u, "-5m", "spec", "ttl")
		}, "ttl must be a positive duration such as 90s, 30m or 4h"),
		Entry("malformed ttl", func(u *unstructured.Unstructured) {
			set(u, "tomorrow", "spec", "ttl")
		}, "ttl must be a positive duration such as 90s, 30m or 4h"),
		Entry("zero grace period", func(u *unstructured.Unstructured) {
			set(u, "0s", "spec", "owner", "gracePeriod")
		}, "gracePeriod must be a positive duration such as 180s or 5m"),
		Entry("malformed memory", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "postgres", "resources": map[string]any{"memory": "lots"}}}, "spec", "services")
		}, "memory must be a positive quantity such as 256Mi or 1Gi"),
		Entry("negative memory", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "postgres", "resources": map[string]any{"memory": "-512Mi"}}}, "spec", "services")
		}, "memory must be a positive quantity such as 256Mi or 1Gi"),
		Entry("zero cpu", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis", "resources": map[string]any{"cpu": "0"}}}, "spec", "services")
		}, "cpu must be a quantity of at least 10m (Docker's smallest CPU quota), such as 500m or 2"),
		Entry("cpu below Docker's floor (runc refuses the quota at start)", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis", "resources": map[string]any{"cpu": "5m"}}}, "spec", "services")
		}, "cpu must be a quantity of at least 10m (Docker's smallest CPU quota), such as 500m or 2"),
		Entry("cpu a hair below the floor", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis", "resources": map[string]any{"cpu": "0.0099"}}}, "spec", "services")
		}, "cpu must be a quantity of at least 10m"),
		Entry("malformed cpu", func(u *unstructured.Unstructured) {
			set(u, []any{map[string]any{"engine": "redis", "resources": map[string]any{"cpu": "fast"}}}, "spec", "services")
		}, "cpu must be a quantity of at least 10m"),
		Entry("unknown owner policy", func(u *unstructured.Unstructured) {
			set(u, "Pod", "spec", "owner", "policy")
		}, `Unsupported value: "Pod": supported values: "Container", "None"`),
		Entry("owner container named although tracking is off", func(u *unstructured.Unstructured) {
			set(u, map[string]any{"policy": "None", "containerName": "agent-1"}, "spec", "owner")
		}, "owner.containerName must be empty when owner.policy is None"),
		Entry("bad owner container name", func(u *unstructured.Unstructured) {
			set(u, "-agent/1", "spec", "owner", "containerName")
		}, "containerName must be a Docker container name"),
		Entry("bad network name", func(u *unstructured.Unstructured) {
			set(u, "my network", "spec", "network")
		}, "network must be a Docker network name"),
		Entry("the host's network", func(u *unstructured.Unstructured) {
			set(u, "host", "spec", "network")
		}, "network must not be host, none or bridge: leave it empty for the operator's default network, or name a user-defined network the operator allows"),
		Entry("no network", func(u *unstructured.Unstructured) {
			set(u, "none", "spec", "network")
		}, "network must not be host, none or bridge"),
		Entry("Docker's default bridge by name", func(u *unstructured.Unstructured) {
			set(u, "bridge", "spec", "network")
		}, "network must not be host, none or bridge"),
		Entry("zero init timeout", func(u *unstructured.Unstructured) {
			set(u, seededFor("0s"), "spec", "services")
		}, "init.timeout must be a positive duration of at most 24h"),
		Entry("init timeout past the ceiling", func(u *unstructured.Unstructured) {
			set(u, seededFor("24h1s"), "spec", "services")
		}, "init.timeout must be a positive duration of at most 24h"),
		Entry("malformed init timeout", func(u *unstructured.Unstructured) {
			set(u, seededFor("a while"), "spec", "services")
		}, "init.timeout must be a positive duration of at most 24h"),
	)

	It("accepts an init timeout of 24h", func() {
		u := sandbox(ns, "seeded")
		set(u, seededFor("24h"), "spec", "services")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
	})

	It("refuses a change of agentID and names the rule", func() {
		u := sandbox(ns, "immutable")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		set(u, "be-dev-2", "spec", "agentID")
		err := k8sClient.Update(ctx, u)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "update accepted or wrong error: %v", err)
		Expect(err.Error()).To(ContainSubstring("agentID is immutable: delete the Sandbox and create a new one"))
	})

	It("accepts a valid Sandbox and applies the owner defaults", func() {
		memory := resource.MustParse("512Mi")
		cpu := resource.MustParse("10m") // Docker's floor is allowed
		sb := &sandboxv1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: ns},
			Spec: sandboxv1.SandboxSpec{
				AgentID: "be-dev-1",
				Services: []sandboxv1.ServiceSpec{
					{Engine: "postgres", Features: []sandboxv1.Feature{"vector", "pg_trgm"},
						Resources: &sandboxv1.ServiceResources{Memory: &memory, CPU: &cpu}},
					{Engine: "redis", Features: []sandboxv1.Feature{"json"}},
					{Engine: "mongo"},
				},
				Network: "roboco_default",
				TTL:     &metav1.Duration{Duration: 4 * 60 * 60 * 1e9},
			},
		}
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())
		got := &sandboxv1.Sandbox{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), got)).To(Succeed())
		Expect(got.Spec.Owner).NotTo(BeNil(), "owner was not defaulted")
		Expect(got.Spec.Owner.Policy).To(Equal(sandboxv1.OwnerPolicyContainer))
		Expect(got.Spec.Owner.ContainerName).To(BeEmpty(), "the manager's template fills the name, not the CRD")
		Expect(got.Spec.Services).To(HaveLen(3))
		Expect(got.Spec.Services[0].Resources.Memory.String()).To(Equal("512Mi"))
		Expect(got.Spec.Services[0].Resources.CPU.String()).To(Equal("10m"))
		Expect(got.Spec.TTL.Duration.String()).To(Equal("4h0m0s"))

		minimal := sandbox(ns, "minimal")
		set(minimal, map[string]any{"policy": "None"}, "spec", "owner")
		set(minimal, "90s", "spec", "ttl")
		Expect(k8sClient.Create(ctx, minimal)).To(Succeed())

		longest := sandbox(ns, strings.Repeat("s", 245)) // <name>-sandbox is then 253, a Secret's longest name
		Expect(k8sClient.Create(ctx, longest)).To(Succeed())
	})

	It("lets every engine's whole allowlist through", func() {
		u := sandbox(ns, "allowlists")
		set(u, []any{
			map[string]any{"engine": "postgres", "features": []any{"vector", "postgis", "pg_trgm", "citext", "uuid-ossp"}},
			map[string]any{"engine": "redis", "features": []any{"search", "json", "bloom"}},
			map[string]any{"engine": "mongo", "features": []any{}},
		}, "spec", "services")
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
	})
})
