package host

import (
	"strconv"
	"strings"
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
	// LabelCredentials is CredentialsHash of the password a container was made
	// with, LabelFeatures the features it was made for: what Docker's record of
	// a container cannot show otherwise.
	LabelCredentials = "sandbox.roboco.io/credentials"
	LabelFeatures    = "sandbox.roboco.io/features"
	// LabelInit is the hash of the init scripts a container was made with (their
	// keys and content; absent: none): a change makes a new container, seeded anew.
	LabelInit = "sandbox.roboco.io/init"
	// LabelVersion is the engine version a service's spec asked for (absent:
	// the operator's default): another version is a new container.
	LabelVersion = "sandbox.roboco.io/version"
	// LabelInstance names the control plane that created a container: a UID proves
	// ownership only to the API server that issued it.
	LabelInstance = "sandbox.roboco.io/instance"
	// LabelPool and LabelPoolUID name the SandboxPool a member was made for,
	// LabelClass the hash of its class (ClassHash). Members carry neither
	// LabelSandbox nor LabelOwner: upstream's janitor never sees them, claimed
	// or not (their teardown is ours).
	LabelPool    = "sandbox.roboco.io/pool"
	LabelPoolUID = "sandbox.roboco.io/pool-uid"
	LabelClass   = "sandbox.roboco.io/class"
	// LabelMember is a member's random nonce, from which its password is derived
	// with its pool's key (a Secret): no password is stored anywhere else.
	LabelMember = "sandbox.roboco.io/member"
	// LabelSandboxTrue is LabelSandbox's value on every sandbox container.
	LabelSandboxTrue = "1"
)

// Restarts reads the restart count a container was created with.
func Restarts(labels map[string]string) int32 {
	n, _ := strconv.Atoi(labels[LabelRestarts])
	return int32(n)
}

// IsSandboxContainer says whether labels mark one of upstream's or our sandbox containers.
func IsSandboxContainer(labels map[string]string) bool {
	return labels[LabelSandbox] == LabelSandboxTrue
}

// MemberPrefix starts every unclaimed pool member's name: no agent resolves it
// to a Sandbox's service (those are roboco-sandbox-<slug>-<agentID>).
const MemberPrefix = "sandboxpool-"

// IsMemberName says whether name is an unclaimed pool member's.
func IsMemberName(name string) bool { return strings.HasPrefix(name, MemberPrefix) }
