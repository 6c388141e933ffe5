// Package config_test checks the deployment manifests: that every kustomization
// renders with the kubectl `make envtest` builds, that the manager gets the least
// privilege it needs, that the Deployment is as tight as the Docker socket allows,
// and that the rendered manifests and the samples are accepted by a real API server.
package config_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// kustomize renders a kustomization under config/ with the built kubectl.
func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(testenv.Root(), "config", dir))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v: %s", dir, err, stderr.String())
	}
	return stdout.Bytes()
}

type object struct {
	kind, name, namespace string
	raw                   []byte
}

func split(t *testing.T, rendered []byte) []object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rendered)))
	var objs []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "" {
			objs = append(objs, object{meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace, doc})
		}
	}
}

func only[T any](t *testing.T, objs []object, kind string) T {
	t.Helper()
	return named[T](t, objs, kind, "")
}

// named is the one object of kind with name (any name when empty).
func named[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.kind == kind && (name == "" || o.name == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s %s, found %d", kind, name, len(found))
	}
	var v T
	if err := yaml.UnmarshalStrict(found[0].raw, &v); err != nil {
		t.Fatalf("%s %s: %v", kind, found[0].name, err)
	}
	return v
}

func TestEveryKustomizationRenders(t *testing.T) {
	for _, dir := range []string{"default", "crd", "rbac", "manager", "samples", "prometheus", "grafana"} {
		if objs := split(t, kustomize(t, dir)); len(objs) == 0 {
			t.Errorf("config/%s renders nothing", dir)
		}
	}
}

func TestDefaultHasEverything(t *testing.T) {
	var got []string
	for _, o := range split(t, kustomize(t, "default")) {
		got = append(got, o.kind+"/"+o.name)
		if o.namespace != "" && o.namespace != "sandbox-system" {
			t.Errorf("%s/%s is in namespace %q, want sandbox-system", o.kind, o.name, o.namespace)
		}
	}
	slices.Sort(got)
	want := []string{
		"ClusterRole/sandbox-controller-manager-role",
		"ClusterRole/sandbox-controller-metrics-auth-role",
		"ClusterRole/sandbox-controller-metrics-reader",
		"ClusterRole/sandbox-controller-sandbox-editor",
		"ClusterRole/sandbox-controller-sandbox-viewer",
		"ClusterRoleBinding/sandbox-controller-manager-rolebinding",
		"ClusterRoleBinding/sandbox-controller-metrics-auth-rolebinding",
		"CustomResourceDefinition/dockerhosts.sandbox.roboco.io",
		"CustomResourceDefinition/sandboxes.sandbox.roboco.io",
		"CustomResourceDefinition/sandboxpolicies.sandbox.roboco.io",
		"CustomResourceDefinition/sandboxpools.sandbox.roboco.io",
		"CustomResourceDefinition/sandboxquotas.sandbox.roboco.io",
		"Deployment/sandbox-controller-controller-manager",
		"Namespace/sandbox-system",
		"Role/sandbox-controller-leader-election-role",
		"RoleBinding/sandbox-controller-leader-election-rolebinding",
		"Service/sandbox-controller-controller-manager-metrics",
		"ServiceAccount/sandbox-controller-controller-manager",
		"ValidatingAdmissionPolicy/sandbox-controller-sandbox-policy",
		"ValidatingAdmissionPolicy/sandbox-controller-teardown-finalizers",
		"ValidatingAdmissionPolicyBinding/sandbox-controller-sandbox-policy",
		"ValidatingAdmissionPolicyBinding/sandbox-controller-teardown-finalizers",
	}
	if !slices.Equal(got, want) {
		t.Errorf("config/default renders\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// allowed is everything the manager may do: Sandboxes and SandboxPools, their
// status and finalizers, Secrets, events, and (in its own namespace) Leases.
var allowed = map[string][]string{
	"sandbox.roboco.io/sandboxes":               {"get", "list", "watch", "update", "patch", "delete"},
	"sandbox.roboco.io/sandboxes/status":        {"get", "update", "patch"},
	"sandbox.roboco.io/sandboxes/finalizers":    {"update"},
	"sandbox.roboco.io/sandboxpools":            {"get", "list", "watch", "update", "patch"},
	"sandbox.roboco.io/sandboxpools/status":     {"get", "update", "patch"},
	"sandbox.roboco.io/sandboxpools/finalizers": {"update"},
	"sandbox.roboco.io/dockerhosts":             {"get", "list", "watch", "create", "update", "patch"},
	"sandbox.roboco.io/sandboxquotas":           {"get", "list", "watch"},
	"sandbox.roboco.io/sandboxquotas/status":    {"get", "update", "patch"},
	"sandbox.roboco.io/sandboxpolicies":         {"get", "list", "watch"},
	"/namespaces":                               {"get", "list", "watch"},
	// A service's init scripts (spec.services[].init.configMapRef): read, and
	// watched as metadata only.
	"/configmaps":                              {"get", "list", "watch"},
	"sandbox.roboco.io/dockerhosts/status":     {"get", "update", "patch"},
	"sandbox.roboco.io/dockerhosts/finalizers": {"update"},
	"/secrets":             {"get", "list", "watch", "create", "update", "patch", "delete"},
	"events.k8s.io/events": {"create", "patch"},
}

// allowedByName is what the manager may do to single named objects: read
// namespace kube-system, whose UID names the cluster (the default --instance).
var allowedByName = map[string]struct{ names, verbs []string }{
	"/namespaces": {names: []string{"kube-system"}, verbs: []string{"get"}},
}

var allowedInOwnNamespace = map[string][]string{
	"coordination.k8s.io/leases": {"get", "list", "watch", "create", "update", "patch", "delete"},
	"/events":                    {"create", "patch"},
}

func checkRules(t *testing.T, what string, rules []rbacv1.PolicyRule, allow map[string][]string) {
	t.Helper()
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: unexpected rule %+v", what, r)
		}
		if len(r.ResourceNames) > 0 {
			checkNamed(t, what, r)
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					if !slices.Contains(allow[g+"/"+res], verb) {
						t.Errorf("%s grants %s on %s/%s: more than the manager needs (allowed: %v)", what, verb, g, res, allow)
					}
				}
			}
		}
	}
}

// checkNamed checks a rule limited to named objects against allowedByName.
func checkNamed(t *testing.T, what string, r rbacv1.PolicyRule) {
	t.Helper()
	for _, g := range r.APIGroups {
		for _, res := range r.Resources {
			allow, ok := allowedByName[g+"/"+res]
			for _, name := range r.ResourceNames {
				for _, verb := range r.Verbs {
					if !ok || !slices.Contains(allow.names, name) || !slices.Contains(allow.verbs, verb) {
						t.Errorf("%s grants %s on %s/%s %s: more than the manager needs", what, verb, g, res, name)
					}
				}
			}
		}
	}
}

// allowedToGuardMetrics is what --metrics-secure needs: to ask who a scraper is
// and whether it may get /metrics.
var allowedToGuardMetrics = map[string][]string{
	"authentication.k8s.io/tokenreviews":        {"create"},
	"authorization.k8s.io/subjectaccessreviews": {"create"},
}

func TestLeastPrivilege(t *testing.T) {
	objs := split(t, kustomize(t, "default"))
	sa := only[corev1.ServiceAccount](t, objs, "ServiceAccount")
	bound := map[string]bool{}
	for _, o := range objs {
		if o.kind != "ClusterRoleBinding" && o.kind != "RoleBinding" {
			continue
		}
		b := named[rbacv1.ClusterRoleBinding](t, objs, o.kind, o.name) // a RoleBinding has the same fields
		if len(b.Subjects) != 1 || b.Subjects[0].Name != sa.Name || b.Subjects[0].Namespace != sa.Namespace {
			t.Errorf("%s %s binds %+v, want only the manager's service account", o.kind, o.name, b.Subjects)
		}
		bound[b.RoleRef.Kind+"/"+b.RoleRef.Name] = true
	}
	for _, r := range []struct {
		kind, name string
		allow      map[string][]string
	}{
		{"ClusterRole", "sandbox-controller-manager-role", allowed},
		{"ClusterRole", "sandbox-controller-metrics-auth-role", allowedToGuardMetrics},
		{"Role", "sandbox-controller-leader-election-role", allowedInOwnNamespace},
	} {
		if !bound[r.kind+"/"+r.name] {
			t.Errorf("nothing binds %s %s to the manager", r.kind, r.name)
		}
		delete(bound, r.kind+"/"+r.name)
		checkRules(t, r.kind+" "+r.name, named[rbacv1.ClusterRole](t, objs, r.kind, r.name).Rules, r.allow)
	}
	for ref := range bound {
		t.Errorf("the manager is also bound to %s", ref)
	}
}

func TestDeploymentIsTight(t *testing.T) {
	objs := split(t, kustomize(t, "default"))
	d := only[appsv1.Deployment](t, objs, "Deployment")
	sa := only[corev1.ServiceAccount](t, objs, "ServiceAccount")
	spec := d.Spec.Template.Spec
	if spec.ServiceAccountName != sa.Name {
		t.Errorf("service account %q, want %q", spec.ServiceAccountName, sa.Name)
	}
	if spec.NodeSelector["sandbox.roboco.io/docker-host"] != "true" {
		t.Errorf("nodeSelector %v: the manager must be pinned to the node labelled sandbox.roboco.io/docker-host=true, whose engine its Sandboxes are bound to", spec.NodeSelector)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("the manager needs no host namespaces")
	}
	var socket *corev1.Volume
	for i, v := range spec.Volumes {
		if v.HostPath != nil {
			if v.HostPath.Path != "/var/run/docker.sock" || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathSocket {
				t.Errorf("hostPath volume %s = %+v, want only the Docker socket, of type Socket", v.Name, v.HostPath)
			}
			socket = &spec.Volumes[i]
		}
	}
	if socket == nil {
		t.Fatal("no Docker socket volume")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if !slices.Contains(c.Args, "--leader-elect") {
		t.Error("the manager does not elect a leader")
	}
	if !slices.Contains(c.Args, "--metrics-secure") {
		t.Error("/metrics is open to anyone who reaches the Pod: want --metrics-secure")
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Privileged == nil || *sc.Privileged ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		len(sc.Capabilities.Add) > 0 {
		t.Errorf("container securityContext %+v: want no privilege escalation, not privileged, read-only root, all capabilities dropped", sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("want the RuntimeDefault seccomp profile")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.Name == socket.Name && m.MountPath == "/var/run/docker.sock"
	}
	if !mounted {
		t.Error("the socket is not mounted at /var/run/docker.sock")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", c.LivenessProbe)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", c.ReadinessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests", c.Resources)
	}
}

// TestManifestsApply applies config/default and the samples to a real API server,
// and asks its RBAC authorizer what the manager's service account may do.
func TestManifestsApply(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	root := testenv.Root()
	if out, err := env.Kubectl("apply", "--server-side", "-k", filepath.Join(root, "config", "default")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	env.MustApply(t, "-n", "default", "-k", filepath.Join(root, "config", "samples"))
	out, err := env.Kubectl("get", "sandboxes", "-n", "default", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{"sandbox.sandbox.roboco.io/demo-features", "sandbox.sandbox.roboco.io/demo-pg", "sandbox.sandbox.roboco.io/demo-trio"}) {
		t.Errorf("samples created %v", got)
	}

	const sa = "system:serviceaccount:sandbox-system:sandbox-controller-controller-manager"
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"watch", "sandboxes.sandbox.roboco.io", "-A"}, true},
		{[]string{"patch", "sandboxes.sandbox.roboco.io", "--subresource=status", "-n", "agents"}, true},
		{[]string{"update", "sandboxes.sandbox.roboco.io", "--subresource=finalizers", "-n", "agents"}, true},
		{[]string{"create", "secrets", "-n", "agents"}, true},
		{[]string{"create", "events.events.k8s.io", "-n", "agents"}, true},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "sandbox-system"}, true},
		{[]string{"create", "sandboxes.sandbox.roboco.io", "-n", "agents"}, false},
		{[]string{"patch", "sandboxpools.sandbox.roboco.io", "--subresource=status", "-n", "agents"}, true},
		{[]string{"delete", "sandboxpools.sandbox.roboco.io", "-n", "agents"}, false},
		{[]string{"update", "leases.coordination.k8s.io", "-n", "kube-system"}, false},
		{[]string{"get", "namespaces/kube-system"}, true}, // its UID names the cluster: the default --instance
		// SandboxPolicies select namespaces by label: the manager reads them (metadata only).
		{[]string{"get", "namespaces/agents"}, true},
		{[]string{"list", "namespaces"}, true},
		{[]string{"update", "namespaces/agents"}, false},
		{[]string{"list", "pods", "-A"}, false},
		{[]string{"get", "configmaps", "-n", "agents"}, true}, // init scripts
		{[]string{"update", "configmaps", "-n", "agents"}, false},
		{[]string{"create", "pods/exec", "-n", "agents"}, false},
		{[]string{"create", "serviceaccounts/token", "-n", "sandbox-system"}, false},
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, true}, // --metrics-secure
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, true},
		{[]string{"get", "/metrics"}, false}, // only scrapers bound to metrics-reader
	} {
		out, err := env.Kubectl(append([]string{"auth", "can-i", "--as", sa}, tc.args...)...)
		got := strings.TrimSpace(out) == "yes"
		if err != nil && got {
			t.Errorf("can-i %v: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("manager can %v: %t, want %t", tc.args, got, tc.want)
		}
	}
}

// The roles for people and orchestrators: the viewer reads Sandboxes and pools
// (never Secrets), the editor also writes their spec (never status), both
// aggregate into the built-in roles, and nothing here binds them.
func TestUserRoles(t *testing.T) {
	objs := split(t, kustomize(t, "default"))
	read := []string{"get", "list", "watch"}
	write := append([]string{"create", "update", "patch", "delete", "deletecollection"}, read...)
	for _, tc := range []struct {
		name      string
		aggregate []string
		allow     map[string][]string
	}{
		{"sandbox-controller-sandbox-viewer", []string{"view"}, map[string][]string{
			"sandbox.roboco.io/sandboxes": read, "sandbox.roboco.io/sandboxpools": read, "sandbox.roboco.io/sandboxes/status": read,
			"sandbox.roboco.io/sandboxpools/status": read, "sandbox.roboco.io/sandboxpools/scale": read,
			"sandbox.roboco.io/sandboxquotas": read, "sandbox.roboco.io/sandboxquotas/status": read}},
		{"sandbox-controller-sandbox-editor", []string{"admin", "edit"}, map[string][]string{
			"sandbox.roboco.io/sandboxes": write, "sandbox.roboco.io/sandboxpools": write, "sandbox.roboco.io/sandboxes/status": {"get"},
			"sandbox.roboco.io/sandboxpools/status": {"get"}, "sandbox.roboco.io/sandboxpools/scale": {"get", "update", "patch"},
			"sandbox.roboco.io/sandboxquotas": read, "sandbox.roboco.io/sandboxquotas/status": read}},
	} {
		role := named[rbacv1.ClusterRole](t, objs, "ClusterRole", tc.name)
		checkRules(t, "ClusterRole "+tc.name, role.Rules, tc.allow)
		for _, to := range tc.aggregate {
			if role.Labels["rbac.authorization.k8s.io/aggregate-to-"+to] != "true" {
				t.Errorf("%s does not aggregate to %s", tc.name, to)
			}
		}
		for _, o := range objs {
			if strings.Contains(string(o.raw), "name: "+tc.name+"\n") && o.kind != "ClusterRole" {
				t.Errorf("%s %s refers to %s: the user roles are for the cluster's admins to bind", o.kind, o.name, tc.name)
			}
		}
	}
}
