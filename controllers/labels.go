package controllers

import (
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Labels on every service container. The first two are upstream's, so its janitor
// and ours agree on what a sandbox container is; the UID label is what proves a
// container belongs to a Sandbox: nothing is removed on the strength of a name alone.
const (
	LabelSandbox    = "roboco.sandbox"
	LabelOwner      = "roboco.sandbox.owner"
	LabelNamespace  = "sandbox.roboco.io/namespace"
	LabelName       = "sandbox.roboco.io/name"
	LabelUID        = "sandbox.roboco.io/uid"
	LabelEngine     = "sandbox.roboco.io/engine"
	LabelConfigHash = "sandbox.roboco.io/config-hash"
	LabelRestarts   = "sandbox.roboco.io/restarts"
	// LabelInstance names the control plane that created a container: a UID proves
	// ownership only to the API server that issued it.
	LabelInstance    = "sandbox.roboco.io/instance"
	labelSandboxTrue = "1"
)

// Finalizer holds a Sandbox until its containers are confirmed gone.
const Finalizer = "sandbox.roboco.io/teardown"

// SecretLabel marks the credentials Secrets, so the manager caches only those.
const SecretLabel = "sandbox.roboco.io/sandbox"

// sandboxKey is the Sandbox a container's labels name.
func sandboxKey(labels map[string]string) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: labels[LabelNamespace], Name: labels[LabelName]}
	return key, key.Namespace != "" && key.Name != ""
}

// uidSelector selects the containers of one Sandbox.
func uidSelector(sb *sandboxv1.Sandbox) map[string]string {
	return map[string]string{LabelUID: string(sb.UID)}
}
