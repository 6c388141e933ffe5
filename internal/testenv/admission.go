package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AdmissionKeepsWhatRuns checks a copy of the SandboxPolicy admission policy
// (config/admission's, or the Helm chart's), applied to env, on what already
// runs: a Sandbox and a pool made on network sandbox-demo in namespace ns,
// before ns was labelled label=value and a SandboxPolicy selecting it allowed
// only another network, are still annotated, bound, scaled and deleted (their
// finalizers removed, as the manager does); a change of their network to one
// the policy refuses is refused naming what is allowed, and so is a create.
func AdmissionKeepsWhatRuns(t T, env *Env, ns, label, value string) {
	t.Helper()
	kubectl := func(args ...string) string { t.Helper(); return env.MustKubectl(t, append(args, "-n", ns)...) }
	refused := func(what string, args ...string) {
		t.Helper()
		out, err := env.Kubectl(append(args, "-n", ns)...)
		if err == nil || !strings.Contains(err.Error(), "allowed: "+value+"-net, or leave it empty") {
			t.Errorf("%s: want it refused naming the allowed network, got %v\n%s", what, err, out)
		}
	}
	apply(t, env, ns, fmt.Sprintf(heldObjects, "kept", "sandbox-demo"))

	env.MustKubectl(t, "label", "namespace", ns, label+"="+value)
	policy := fmt.Sprintf(policyFor, ns, label, value)
	apply(t, env, "", policy)
	t.Cleanup(func() { _, _ = env.Kubectl("delete", "sandboxpolicy", ns, "--ignore-not-found") })
	// Note: the API server judges with the new SandboxPolicy a moment after it is made.
	WaitFor(t, 2*time.Minute, 200*time.Millisecond, "the SandboxPolicy judging creates in "+ns, func() bool {
		out, err := env.Kubectl("apply", "-n", ns, "-f", manifest(t, fmt.Sprintf(newSandbox, "sandbox-demo")))
		if err == nil {
			_, _ = env.Kubectl("delete", "-n", ns, "sandbox/new", "--ignore-not-found")
		}
		return err != nil && strings.Contains(err.Error()+out, "allowed: "+value+"-net")
	})

	kubectl("annotate", "sandbox/kept", "sandboxpool/kept", "example.com/note=kept")
	kubectl("patch", "sandbox/kept", "--type=merge", "-p", `{"spec":{"dockerHost":"local","ttl":"2h"}}`)
	kubectl("scale", "sandboxpool/kept", "--replicas=3")
	refused("a Sandbox's network changed", "patch", "sandbox/kept", "--type=merge", "-p", `{"spec":{"network":"shared"}}`)
	refused("a pool's network changed", "patch", "sandboxpool/kept", "--type=merge", "-p", `{"spec":{"network":"shared"}}`)

	kubectl("delete", "sandbox/kept", "sandboxpool/kept", "--wait=false")
	kubectl("annotate", "sandbox/kept", "example.com/note=going", "--overwrite")
	kubectl("patch", "sandbox/kept", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	kubectl("patch", "sandboxpool/kept", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	WaitFor(t, time.Minute, 100*time.Millisecond, "the deleted Sandbox and pool gone", func() bool {
		out, err := env.Kubectl("get", "sandbox,sandboxpool", "-n", ns, "-o", "name")
		return err == nil && strings.TrimSpace(out) == ""
	})
}

// heldObjects is a Sandbox and a pool (name, network) held by a
// finalizer as the manager holds them.
const heldObjects = `apiVersion: sandbox.roboco.io/v1alpha1
kind: Sandbox
metadata:
  name: %[1]s
  finalizers: [sandbox.roboco.io/teardown]
spec:
  agentID: agent-%[1]s
  network: %[2]s
  services: [{engine: redis}]
---
apiVersion: sandbox.roboco.io/v1alpha1
kind: SandboxPool
metadata:
  name: %[1]s
  finalizers: [sandbox.roboco.io/pool-teardown]
spec:
  network: %[2]s
  service: {engine: redis}
`

// newSandbox is a Sandbox on a network, held by nothing.
const newSandbox = `apiVersion: sandbox.roboco.io/v1alpha1
kind: Sandbox
metadata: {name: new}
spec: {agentID: agent-new, network: %s, services: [{engine: redis}]}
`

// policyFor is a SandboxPolicy (name, label, value) allowing only network value-net.
const policyFor = `apiVersion: sandbox.roboco.io/v1alpha1
kind: SandboxPolicy
metadata:
  name: %[1]s
spec:
  namespaceSelector:
    matchLabels: {%[2]s: %[3]s}
  networks: [%[3]s-net]
`

func apply(t T, env *Env, ns, yaml string) {
	t.Helper()
	args := []string{"-f", manifest(t, yaml)}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	env.MustApply(t, args...)
}

func manifest(t T, yaml string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatalf("writing %s: %v", f, err)
	}
	return f
}
