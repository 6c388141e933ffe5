package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

const poolUIDLabel = "sandbox.roboco.io/pool-uid"

// passwordFiles is where a service container keeps its password, by engine, and
// how to read it from the file's text.
var passwordFiles = map[string]struct {
	path  string
	parse func(string) string
}{
	"postgres": {"/run/secrets/postgres-password", strings.TrimSpace},
	"redis":    {"/run/secrets/redis.conf", requirepass},
}

// requirepass is the password of a redis.conf (the file holds other settings too).
func requirepass(conf string) string {
	for l := range strings.SplitSeq(conf, "\n") {
		if pw, ok := strings.CutPrefix(strings.TrimSpace(l), "requirepass "); ok {
			return pw
		}
	}
	return ""
}

// containerPassword reads the password a service container holds, from inside it.
func containerPassword(t *testing.T, engine, id string) string {
	t.Helper()
	f, ok := passwordFiles[engine]
	if !ok {
		t.Fatalf("no password file known for %s", engine)
	}
	return f.parse(docker(t, "exec", id, "cat", f.path))
}

// dockerContainer is what the tests read of a container.
type dockerContainer struct{ id, name, state string }

// poolContainers lists every container carrying the pool's UID, claimed or not.
func poolContainers(t *testing.T, poolUID string) []dockerContainer {
	t.Helper()
	return listContainers(t, "label="+poolUIDLabel+"="+poolUID)
}

// listContainers lists containers matching a docker ps filter, with full IDs.
func listContainers(t *testing.T, filter string) []dockerContainer {
	t.Helper()
	var out []dockerContainer
	for _, l := range strings.Split(strings.TrimSpace(docker(t, "ps", "-a", "--no-trunc", "--filter", filter,
		"--format", "{{.ID}} {{.Names}} {{.State}}")), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			out = append(out, dockerContainer{f[0], f[1], f[2]})
		}
	}
	return out
}

// memberPasswords reads every member's password from inside it, by container ID.
func memberPasswords(t *testing.T, engine, poolUID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range poolContainers(t, poolUID) {
		out[c.id] = containerPassword(t, engine, c.id)
	}
	return out
}

// serviceStatus is a Sandbox's status.services[] entry, as the tests read it.
type serviceStatus struct {
	Engine        string `json:"engine"`
	ContainerID   string `json:"containerID"`
	ContainerName string `json:"containerName"`
	Ready         bool   `json:"ready"`
}

// sandboxState is what the tests read of a Sandbox.
type sandboxState struct {
	Metadata struct {
		UID         string            `json:"uid"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Services []serviceStatus `json:"services"`
		// Claims are the claim records by engine (status.claims).
		Claims map[string]struct {
			ContainerID string `json:"containerID"`
		} `json:"claims"`
	} `json:"status"`
}

func getSandbox(t *testing.T, ns, name string) sandboxState {
	t.Helper()
	var sb sandboxState
	if err := json.Unmarshal([]byte(kubectl(t, "get", "sandbox", name, "-n", ns, "-o", "json")), &sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

// poolUID is a SandboxPool's metadata.uid.
func poolUID(t *testing.T, ns, name string) string {
	t.Helper()
	return kubectl(t, "get", "sandboxpool", name, "-n", ns, "-o", "jsonpath={.metadata.uid}")
}

// poolYAML is a SandboxPool manifest of replicas members of engine.
func poolYAML(name, engine string, replicas int) string {
	return fmt.Sprintf("apiVersion: sandbox.roboco.io/v1alpha1\nkind: SandboxPool\nmetadata: {name: %s}\nspec:\n  replicas: %d\n  service: {engine: %s}\n",
		name, replicas, engine)
}

var clients sync.Map // engine → client container name

// clientContainer is a container of engine's image on the e2e network, idle, to
// run that engine's client from, as an agent does: by the Secret's host name,
// which only Docker's DNS on that network resolves. One per engine and run;
// TestMain removes it by its test label.
func clientContainer(t *testing.T, engine string) string {
	t.Helper()
	name := "sbx-e2e-client-" + engine + "-" + runID
	if _, loaded := clients.LoadOrStore(engine, name); loaded {
		return name
	}
	args := []string{"run", "-d", "--name", name, "--label", testLabel + "=" + runID, "--network", network}
	// Note: tmpfs over the image's volumes, so its removal leaves no volume behind.
	vols := docker(t, "image", "inspect", "-f", "{{range $k, $v := .Config.Volumes}}{{$k}} {{end}}", images.Plain[engine])
	for _, v := range strings.Fields(vols) {
		args = append(args, "--tmpfs", v)
	}
	docker(t, append(args, "--entrypoint", "sleep", images.Plain[engine], "infinity")...)
	return name
}

// login runs engine's own client in a client container against the service the
// published variables vars name, with password; it returns what the client said
// and whether it logged in, or was refused for its credentials (refused), as
// opposed to not reaching the server at all.
func login(t *testing.T, engine string, vars map[string]string, password string) (out string, in, refused bool) {
	t.Helper()
	var args []string
	switch engine {
	case "postgres":
		args = []string{"-e", "PGPASSWORD=" + password, "-e", "PGCONNECT_TIMEOUT=10", clientContainer(t, engine),
			"psql", "-X", "-w", "-tA", "-h", vars["ROBOCO_TEST_DB_HOST"], "-p", vars["ROBOCO_TEST_DB_PORT"],
			"-U", vars["ROBOCO_TEST_DB_USER"], "-d", vars["ROBOCO_TEST_DB_ADMIN_DB"], "-c", "SELECT 1"}
	case "redis":
		args = []string{"-e", "REDISCLI_AUTH=" + password, clientContainer(t, engine),
			"redis-cli", "--no-auth-warning", "-h", vars["ROBOCO_TEST_REDIS_HOST"], "-p", vars["ROBOCO_TEST_REDIS_PORT"], "PING"}
	default:
		t.Fatalf("no client for %s", engine)
	}
	b, _ := exec.Command("docker", append([]string{"exec"}, args...)...).CombinedOutput()
	out = strings.TrimSpace(string(b))
	switch engine {
	case "postgres":
		return out, out == "1", strings.Contains(out, "password authentication failed")
	default:
		return out, out == "PONG", strings.Contains(out, "WRONGPASS") || strings.Contains(out, "NOAUTH")
	}
}

// servesOwnPassword proves a member claimed by a new Sandbox answers, by its
// published host name, to the password its Secret (vars) holds, and that this
// is the member's own from before the claim (earlier, by member ID), which no
// other member has: the claim rotated nothing, and no one else knows it.
func servesOwnPassword(t *testing.T, engine, id string, vars map[string]string, passwordKey string, earlier map[string]string) {
	t.Helper()
	if out, in, _ := login(t, engine, vars, vars[passwordKey]); !in {
		t.Errorf("%s refused the Secret's password: %s", engine, out)
	}
	if vars[passwordKey] != earlier[id] {
		t.Errorf("%s: the Secret does not hold the member's own password", engine)
	}
	for other, pw := range earlier {
		if other != id && pw == vars[passwordKey] {
			t.Errorf("%s: member %s also has the Sandbox's password", engine, other)
		}
	}
}

// servedOnce checks that exactly one container is the Sandbox's one service: of
// those carrying its UID, the pool's named as its service, and any container of
// that name, and that it is the one its status names; it returns its ID.
func servedOnce(t *testing.T, ns, name, poolUID string) string {
	t.Helper()
	sb := getSandbox(t, ns, name)
	if len(sb.Status.Services) != 1 || !sb.Status.Services[0].Ready {
		t.Fatalf("%s: status.services %+v, want one Ready service", name, sb.Status.Services)
	}
	s := sb.Status.Services[0]
	ids := map[string]bool{}
	for _, c := range listContainers(t, "label=sandbox.roboco.io/uid="+sb.Metadata.UID) {
		ids[c.id] = true
	}
	for _, c := range append(poolContainers(t, poolUID), listContainers(t, "name="+s.ContainerName)...) {
		if c.name == s.ContainerName {
			ids[c.id] = true
		}
	}
	if len(ids) != 1 || !ids[s.ContainerID] {
		t.Errorf("%s: containers %v serve %s, want only %s", name, ids, s.ContainerName, s.ContainerID)
	}
	return s.ContainerID
}

// claimedOf counts the served containers that are the pool's members.
func claimedOf(t *testing.T, served map[string]string, poolUID string) int {
	t.Helper()
	n := 0
	for _, c := range poolContainers(t, poolUID) {
		if served[c.id] != "" {
			n++
		}
	}
	return n
}

// clearSandboxStatus empties a Sandbox's status with an update of its status
// subresource, as a restore from a backup without status leaves it.
func clearSandboxStatus(t *testing.T, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dynamic.NewForConfigOrDie(env.Config).Resource(sandboxes).Namespace(ns)
	sb, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(sb.Object, "status")
	if _, err := c.UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A cleared status reads back as the CRD's default: observedGeneration -1 only.
	if got := kubectl(t, "get", "sandbox", name, "-n", ns, "-o", "jsonpath={.status}"); got != "" && got != "{}" && got != `{"observedGeneration":-1}` {
		t.Fatalf("the status was not cleared: %s", got)
	}
}
