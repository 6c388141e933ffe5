// Package e2e drives the built manager binary, as a separate process, against a real
// API server (envtest) and the real Docker engine with the local engine images,
// the way users do: kubectl, an orchestrator written with client-go, signals.
package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var (
	runID = func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}()
	// instance scopes everything this run's managers judge on the shared Docker host.
	instance = "e2e-" + runID
	env      *testenv.Env
	network  = "sbx-e2e-" + runID
	binDir   string
	images   testenv.Images
)

const testLabel = "sandbox.roboco.io/test"

// poll is how often the suite looks again while waiting for a state (each look
// runs kubectl, docker or curl).
const poll = 200 * time.Millisecond

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("SANDBOX_SKIP_DOCKER") == "1" {
		fmt.Println("SANDBOX_SKIP_DOCKER=1: skipping the end-to-end suite")
		return 0
	}
	var err error
	if binDir, err = os.MkdirTemp("", "sandbox-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := os.RemoveAll(binDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err := testenv.BuildBinaries(binDir, map[string]string{"manager": "./cmd/manager", "orchestrator": "./examples/orchestrator"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if images, err = testenv.EngineImages(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if out, err := exec.Command("docker", "network", "create", "--label", testLabel+"="+runID, network).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "creating network: %v: %s", err, out)
		return 1
	}
	defer func() { _ = exec.Command("docker", "network", "rm", network).Run() }()
	if env, err = testenv.StartCluster(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	code := m.Run()
	// Whatever a failed test left: only this run's containers, found by their labels
	// (the sandboxes by this run's instance, the stand-in owners by the test label).
	for _, label := range []string{"sandbox.roboco.io/instance=" + instance, testLabel + "=" + runID} {
		_ = exec.Command("sh", "-c", "docker ps -aq --filter label="+label+" | xargs -r docker rm -fv").Run()
	}
	return code
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := env.Kubectl(args...)
	if err != nil {
		if len(args) > 0 && args[0] == "wait" {
			t.Log(waitedFor(args))
		}
		t.Fatal(err)
	}
	return out
}

// waitedFor is what a kubectl wait that failed waited on, as it stands: each
// object's conditions, so that a failure says why.
func waitedFor(args []string) string {
	ns := []string{}
	var objects []string
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" && i+1 < len(args):
			ns = []string{"-n", args[i+1]}
			i++
		case !strings.HasPrefix(a, "-"):
			objects = append(objects, a)
		}
	}
	var b strings.Builder
	for _, o := range objects {
		out, _ := env.Kubectl(append(append([]string{"get", o}, ns...), "-o",
			`jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}`)...)
		fmt.Fprintf(&b, "%s, as it stands:\n%s\n", o, out)
	}
	return b.String()
}

// secretData reads a Secret's decoded data through kubectl.
func secretData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var s struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "secret", name, "-n", ns, "-o", "json")), &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// containerIP is a container's address on the e2e network (the host test process
// resolves no Docker DNS names).
func containerIP(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{(index .NetworkSettings.Networks \""+network+"\").IPAddress}}", name).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// dockerPS lists the names of containers with these labels (key=value).
func dockerPS(t *testing.T, labels ...string) []string {
	t.Helper()
	args := []string{"ps", "-a", "--format", "{{.Names}}"}
	for _, l := range labels {
		args = append(args, "--filter", "label="+l)
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// startOwner starts a stand-in agent container (an owner) on the network.
func startOwner(t *testing.T, name string) {
	t.Helper()
	// Note: a tmpfs over the image's VOLUME, so a `docker rm -f` (without -v), as a
	// user removes an agent, leaves no anonymous volume behind.
	out, err := exec.Command("docker", "run", "-d", "--name", name, "--label", testLabel+"="+runID,
		"--network", network, "--tmpfs", "/data", "--entrypoint", "sleep", images.Plain["redis"], "infinity").CombinedOutput()
	if err != nil {
		t.Fatalf("starting owner %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-fv", name).Run() })
}

func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := name + "-" + runID
	kubectl(t, "create", "namespace", ns)
	return ns
}

// docker runs the docker CLI, failing the test on an error.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v: %s", args, err, out)
	}
	return string(out)
}

// applyYAML runs kubectl apply on a manifest, as a user pastes one.
func applyYAML(t *testing.T, ns, manifest string) {
	t.Helper()
	if out, err := applyYAMLErr(t, ns, manifest); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// applyYAMLErr is applyYAML for a manifest the API server may refuse.
func applyYAMLErr(t *testing.T, ns, manifest string) (string, error) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "manifest-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(manifest); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	return env.Kubectl("apply", "-n", ns, "-f", f.Name())
}

var agentIDLine = regexp.MustCompile(`(?m)^(\s+agentID:\s*)(\S+)\s*$`)

// sampleManifest is a config/samples file as a user applies it, with its agentID
// made unique to this run: agentIDs name Docker containers, one per host, and
// `make demo` applies the same samples on the same daemon.
func sampleManifest(t *testing.T, file string) (manifest, agentID string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	found := agentIDLine.FindAllStringSubmatch(string(raw), -1)
	if len(found) != 1 {
		t.Fatalf("%s: want one spec.agentID line, found %d", file, len(found))
	}
	agentID = found[0][2] + "-" + runID
	return agentIDLine.ReplaceAllString(string(raw), "${1}"+agentID), agentID
}

// sandboxYAML is a Sandbox manifest as a user writes one; owner and services are
// YAML flow values, e.g. "{policy: None}" and "[{engine: redis}]".
func sandboxYAML(name, agentID, owner, services string) string {
	return fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  agentID: %s\n  owner: %s\n  services: %s\n",
		name, agentID, owner, services)
}
