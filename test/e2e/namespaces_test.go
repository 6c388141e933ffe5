package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestNamespaceDeletionEmptiesIt: with kube-controller-manager beside the API
// server (as in a cluster), `kubectl delete namespace` of a namespace holding a
// Sandbox and a warm pool completes, and every container of both goes. With an
// API server alone the namespace stayed Terminating for good, its Sandbox Ready.
func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	startManager(t)
	ns := newNamespace(t, "nsdel")
	applyYAML(t, ns, sandboxYAML("app", "nsdel-"+runID, "{policy: None}", "[{engine: redis}]"))
	applyYAML(t, ns, poolYAML("warm", "redis", 1))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/app", "--timeout=180s")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxpool/warm", "--timeout=180s")
	sbUID := kubectl(t, "get", "-n", ns, "sandbox/app", "-o", "jsonpath={.metadata.uid}")
	pool := poolUID(t, ns, "warm")
	if len(dockerPS(t, "sandbox.roboco.io/uid="+sbUID)) == 0 || len(poolContainers(t, pool)) == 0 {
		t.Fatal("before the deletion: want the Sandbox's and the pool's containers")
	}

	// Note: kubectl waits for the namespace to be gone (its default --wait).
	kubectl(t, "delete", "namespace", ns, "--timeout=180s")
	if out, err := env.Kubectl("get", "namespace", ns); err == nil {
		t.Fatalf("namespace %s still there after kubectl delete returned: %s", ns, out)
	}
	testenv.WaitFor(t, 60*time.Second, poll, "the namespace's containers gone", func() bool {
		return len(dockerPS(t, "sandbox.roboco.io/uid="+sbUID)) == 0 && len(poolContainers(t, pool)) == 0
	})
}

// TestNativeCountQuota: Kubernetes' own object-count quota on Sandboxes
// (count/sandboxes.sandbox.roboco.io) refuses, at the API server, the Sandbox
// over its count; the quota controller keeps its usage, so deleting one admits
// another.
func TestNativeCountQuota(t *testing.T) {
	ns := newNamespace(t, "nsquota")
	// Note: gone before the next test's managers start (no manager runs here, so
	// nothing holds its Sandboxes), or they would provision what is left of it.
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "namespace", ns, "--timeout=60s") })
	applyYAML(t, ns, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: sandboxes}\nspec:\n  hard: {count/sandboxes.sandbox.roboco.io: \"1\"}\n")
	// Note: the quota admits nothing until the quota controller has written its usage.
	testenv.WaitFor(t, 60*time.Second, poll, "the quota's usage computed", func() bool {
		out, _ := env.Kubectl("get", "-n", ns, "resourcequota/sandboxes", "-o", "jsonpath={.status.used}")
		return strings.Contains(out, "count/sandboxes.sandbox.roboco.io")
	})
	// No manager runs: the quota is the API server's alone (nothing holds a finalizer).
	applyYAML(t, ns, sandboxYAML("one", "nsquota-1-"+runID, "{policy: None}", "[{engine: redis}]"))
	second := sandboxYAML("two", "nsquota-2-"+runID, "{policy: None}", "[{engine: redis}]")
	if _, err := applyYAMLErr(t, ns, second); err == nil || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("a second Sandbox under count/sandboxes.sandbox.roboco.io=1: got %v, want refused with \"exceeded quota\"", err)
	}
	// Note: the quota controller counts the first gone a moment after it is.
	kubectl(t, "delete", "-n", ns, "sandbox/one", "--timeout=60s")
	testenv.WaitFor(t, 60*time.Second, poll, "the second Sandbox admitted once the first is gone", func() bool {
		_, err := applyYAMLErr(t, ns, second)
		return err == nil
	})
}
