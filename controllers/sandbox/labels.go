package sandbox

import (
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Finalizer holds a Sandbox until its containers are confirmed gone.
const Finalizer = sandboxv1.SandboxFinalizer

// SecretLabel marks the credentials Secrets, so the manager caches only those
// (CacheOptions selects on the key alone). Its value is the Sandbox's UID, which
// always fits a label value; releases before it wrote the Sandbox's name, which
// does not when longer than 63 characters.
const SecretLabel = "sandbox.roboco.io/sandbox"

// sandboxKey is the Sandbox a container's labels name.
func sandboxKey(labels map[string]string) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: labels[host.LabelNamespace], Name: labels[host.LabelName]}
	return key, key.Namespace != "" && key.Name != ""
}

// uidSelector selects the containers of one Sandbox.
func uidSelector(sb *sandboxv1.Sandbox) map[string]string {
	return map[string]string{host.LabelUID: string(sb.UID)}
}
