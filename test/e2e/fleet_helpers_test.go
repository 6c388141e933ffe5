package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// placedSandboxYAML is a one-redis Sandbox without owner, with a placement line
// (dockerHost or dockerHostSelector, as YAML under spec).
func placedSandboxYAML(name, placement string) string {
	return sandboxYAML(name, name+"-"+runID, "{policy: None}", "[{engine: redis}]") + "  " + placement + "\n"
}

func (f *fleetRun) specHost(t *testing.T, name string) string {
	t.Helper()
	return kubectl(t, "get", "sandbox", name, "-n", f.ns, "-o", "jsonpath={.spec.dockerHost}")
}

// readyOf is a Sandbox's Ready condition as status/reason ("" when unreadable).
func (f *fleetRun) readyOf(name string) string {
	out, err := env.Kubectl("get", "sandbox", name, "-n", f.ns, "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`)
	if err != nil {
		return ""
	}
	return out
}

// waitReady waits until a Sandbox's Ready condition is want (status/reason).
func (f *fleetRun) waitReady(t *testing.T, name, want string) {
	t.Helper()
	waitSeen(t, 2*time.Minute, "sandbox "+name+" Ready "+want, func() (bool, string) {
		got := f.readyOf(name)
		return got == want, "Ready " + got
	})
}

// waitHost waits until a DockerHost's Ready condition has status want (the
// manager creates local at its start: it may not exist yet).
func waitHost(t *testing.T, h *fleetHost, want string) {
	t.Helper()
	waitSeen(t, 2*time.Minute, "DockerHost "+h.name+" Ready "+want, func() (bool, string) {
		out, err := env.Kubectl("get", "dockerhost", h.name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].message}`)
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(out, want+"/"), "Ready " + out
	})
}

// waitSeen polls look until it is done; after timeout it fails the test with
// what it saw last.
func waitSeen(t *testing.T, timeout time.Duration, what string, look func() (done bool, seen string)) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(poll) {
		done, seen := look()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, seen)
		}
	}
}

// fleetSandbox is what TestFleet reads of a Sandbox.
type fleetSandbox struct {
	Metadata struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		DockerHost string `json:"dockerHost"`
	} `json:"spec"`
	Status struct {
		Services []serviceStatus `json:"services"`
	} `json:"status"`
}

// sandboxes reads the namespace's Sandboxes, by name.
func (f *fleetRun) sandboxes(t *testing.T) map[string]fleetSandbox {
	t.Helper()
	var list struct {
		Items []fleetSandbox `json:"items"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "sandboxes", "-n", f.ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]fleetSandbox{}
	for _, sb := range list.Items {
		out[sb.Metadata.Name] = sb
	}
	return out
}

// served is, on each host (by DockerHost), the IDs of the namespace's service
// containers by Sandbox UID and engine.
type served map[string]map[string]map[string][]string

func (f *fleetRun) served(t *testing.T) served {
	t.Helper()
	out := served{}
	for _, h := range f.hosts {
		out[h.name] = map[string]map[string][]string{}
		lines := h.docker(t, "ps", "-a", "--no-trunc", "--filter", "label=sandbox.roboco.io/namespace="+f.ns,
			"--format", `{{.ID}} {{.Label "sandbox.roboco.io/uid"}} {{.Label "sandbox.roboco.io/engine"}}`)
		for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
			c := strings.Fields(line) // id, uid, engine
			if len(c) != 3 {
				continue
			}
			if out[h.name][c[1]] == nil {
				out[h.name][c[1]] = map[string][]string{}
			}
			out[h.name][c[1]][c[2]] = append(out[h.name][c[1]][c[2]], c[0])
		}
	}
	return out
}

// checkServed checks that sb is served on the host it is bound to, by one
// container per engine, the ones its status names, and on no other host.
func (f *fleetRun) checkServed(t *testing.T, sb fleetSandbox, s served) {
	t.Helper()
	var want, got []string
	for _, svc := range sb.Status.Services {
		want = append(want, svc.ContainerID)
	}
	for host, byUID := range s {
		for engine, ids := range byUID[sb.Metadata.UID] {
			switch {
			case host != sb.Spec.DockerHost:
				t.Errorf("sandbox %s, bound to %s, has %s containers on %s: %v", sb.Metadata.Name, sb.Spec.DockerHost, engine, host, ids)
			case len(ids) != 1:
				t.Errorf("sandbox %s: %d %s containers on %s, want one: %v", sb.Metadata.Name, len(ids), engine, host, ids)
			}
			got = append(got, ids...)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("sandbox %s: containers %v, want %v (its status)", sb.Metadata.Name, got, want)
	}
}

// boundTo checks that a Ready Sandbox is bound to h and served there only.
func (f *fleetRun) boundTo(t *testing.T, name string, h *fleetHost) {
	t.Helper()
	sb := f.sandboxes(t)[name]
	if sb.Spec.DockerHost != h.name {
		t.Fatalf("sandbox %s: spec.dockerHost %q, want %s", name, sb.Spec.DockerHost, h.name)
	}
	f.checkServed(t, sb, f.served(t))
}
