package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestChartInstalls: on an API server with no CRD, helm install brings the CRDs,
// the manager's RBAC (it may do its work, and no more than config/default
// grants) and its Deployment; upgrade applies new values; uninstall removes the
// release and keeps the CRDs and the Sandboxes, as docs/operating.md says.
func TestChartInstalls(t *testing.T) {
	env, err := testenv.StartWithoutCRDs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kc := []string{"--kubeconfig", env.Kubeconfig(), "--namespace", namespace}
	kubectl := func(args ...string) string { t.Helper(); return env.MustKubectl(t, args...) }

	helm(t, append([]string{"install", release, chart, "--create-namespace"}, kc...)...)
	kubectl("wait", "--for=condition=Established", "crd/sandboxes.sandbox.roboco.io", "crd/sandboxpools.sandbox.roboco.io", "--timeout=60s")
	env.MustApply(t, "-n", "default", "-f", filepath.Join(testenv.Root(), "config", "samples", "sandbox_v1alpha1_postgres.yaml"))
	const sa = "system:serviceaccount:" + namespace + ":" + release + "-controller-manager"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "sandboxes.sandbox.roboco.io", "-A"}, "yes"},
		{[]string{"patch", "sandboxes.sandbox.roboco.io", "--subresource=status", "-n", "default"}, "yes"},
		{[]string{"create", "secrets", "-n", "default"}, "yes"},
		{[]string{"update", "leases.coordination.k8s.io", "-n", namespace}, "yes"},
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
		{[]string{"create", "sandboxes.sandbox.roboco.io", "-n", "default"}, "no"},
		{[]string{"list", "pods", "-A"}, "no"},
	} {
		out, _ := env.Kubectl(append([]string{"auth", "can-i", "--as", sa}, tc.args...)...)
		if got := strings.TrimSpace(out); got != tc.want {
			t.Errorf("installed manager can %v: %q, want %q", tc.args, got, tc.want)
		}
	}

	helm(t, append([]string{"upgrade", release, chart, "--set", "replicaCount=2"}, kc...)...)
	if got := kubectl("get", "deployment", release+"-controller-manager", "-n", namespace, "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("after upgrade --set replicaCount=2: %s replicas", got)
	}

	helm(t, append([]string{"uninstall", release}, kc...)...)
	if out := kubectl("get", "deployments,serviceaccounts,roles", "-n", namespace, "-l", "app.kubernetes.io/instance="+release, "-o", "name"); out != "" {
		t.Errorf("left after uninstall: %s", out)
	}
	if out := kubectl("get", "clusterroles", "-l", "app.kubernetes.io/instance="+release, "-o", "name"); out != "" {
		t.Errorf("left after uninstall: %s", out)
	}
	if got := kubectl("get", "sandboxes", "-n", "default", "-o", "name"); got != "sandbox.sandbox.roboco.io/demo-pg" {
		t.Errorf("after uninstall the Sandboxes are %q, want demo-pg kept (the CRDs stay)", got)
	}
}

// TestChartAdmissionPolicyKeepsWhatRuns: the chart's copy of the SandboxPolicy
// admission policy, applied alone, judges creates and network changes only:
// what a namespace ran before its policy is still edited and deleted.
func TestChartAdmissionPolicyKeepsWhatRuns(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	policy := filepath.Join(t.TempDir(), "admission-policy.yaml")
	rendered := helm(t, "template", release, chart, "--namespace", namespace, "--show-only", "templates/admission-policy.yaml")
	if err := os.WriteFile(policy, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	env.MustKubectl(t, "apply", "-f", policy)
	env.MustKubectl(t, "create", "namespace", "tenant")
	testenv.AdmissionKeepsWhatRuns(t, env, "tenant", "sandbox.roboco.io/team", "a")
}
