package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// downHold is how long the killed host stays down at least (and until its
// Sandbox has said so): longer than the owner grace period and the sweep
// interval the e2e managers run with (5s), so that a Sandbox deleted, or a
// container reaped, because a host is down would be.
const downHold = 15 * time.Second

// hostKilled: b's dockerd is killed; its Sandbox reports DockerUnavailable and
// keeps everything; b back, it is Ready again on the same containers.
func (f *fleetRun) hostKilled(t *testing.T) {
	sb := getSandbox(t, f.ns, "beside")
	before := ids(f.b.containers(t, "sandbox.roboco.io/uid="+sb.Metadata.UID))
	owner := ids(f.b.containers(t, testLabel+"="+runID))
	if len(before) == 0 || len(owner) == 0 {
		t.Fatalf("on %s before its daemon is killed: Sandbox containers %v, agent containers %v", f.b.name, before, owner)
	}
	f.b.d.Kill()
	killed := time.Now()
	f.waitReady(t, "beside", "False/DockerUnavailable")
	t.Logf("%s killed → its Sandbox DockerUnavailable: %s", f.b.name, time.Since(killed).Round(100*time.Millisecond))
	waitHost(t, f.b, "False")
	for end := killed.Add(downHold); time.Now().Before(end); time.Sleep(poll) {
		out, err := env.Kubectl("get", "sandbox", "beside", "-n", f.ns, "-o", "jsonpath={.metadata.deletionTimestamp}")
		if err != nil || out != "" {
			t.Fatalf("the Sandbox of the host that is down is being deleted (deletionTimestamp %q, %v)", out, err)
		}
	}
	if err := f.b.d.Start(f.b.d.DataRoot); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	kubectl(t, "wait", "-n", f.ns, "--for=condition=Ready", "sandbox/beside", "--timeout=120s")
	t.Logf("%s back → its Sandbox Ready: %s", f.b.name, time.Since(back).Round(100*time.Millisecond))
	if after := ids(f.b.containers(t, "sandbox.roboco.io/uid="+sb.Metadata.UID)); !slices.Equal(after, before) {
		t.Errorf("containers of the Sandbox before the host went down %v, after it came back %v", before, after)
	}
	if got := ids(f.b.containers(t, testLabel+"="+runID)); !slices.Equal(got, owner) {
		t.Errorf("the agent containers before %v, after %v", owner, got)
	}
	f.boundTo(t, "beside", f.b)
}

// managerKilled: SIGKILL the manager while it creates Sandboxes on all three
// hosts; a new one makes them Ready with one container per service, on the
// host each is bound to only.
func (f *fleetRun) managerKilled(t *testing.T) {
	kubectl(t, "patch", "dockerhost", f.c.name, "--type=merge", "-p", `{"spec":{"capacity":{"sandboxes":4}}}`)
	before := 0
	for _, h := range f.hosts {
		before += len(h.containers(t, "sandbox.roboco.io/namespace="+f.ns))
	}
	for i := range 2 {
		applyYAML(t, f.ns, placedSandboxYAML(fmt.Sprintf("crash-local-%d", i), "dockerHost: local"))
		applyYAML(t, f.ns, placedSandboxYAML(fmt.Sprintf("crash-b-%d", i), "dockerHostSelector: {matchLabels: {zone: b}}"))
		applyYAML(t, f.ns, placedSandboxYAML(fmt.Sprintf("crash-c-%d", i), "dockerHostSelector: {matchLabels: {zone: c}}"))
	}
	applied := time.Now()
	waitSeen(t, time.Minute, "the first new containers", func() (bool, string) {
		n := 0
		for _, h := range f.hosts {
			n += len(h.containers(t, "sandbox.roboco.io/namespace="+f.ns))
		}
		return n > before, fmt.Sprintf("%d containers, %d before", n, before)
	})
	f.m.kill()
	t.Logf("applied → first containers → manager killed: %s", time.Since(applied).Round(100*time.Millisecond))
	t.Logf("killed the manager with Sandboxes Ready: %s", kubectl(t, "get", "sandboxes", "-n", f.ns, "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`))
	restarted := time.Now()
	f.m = startManager(t)
	kubectl(t, "wait", "-n", f.ns, "--for=condition=Ready", "sandbox", "--all", "--timeout=180s")
	t.Logf("a new manager started → every Sandbox Ready: %s", time.Since(restarted).Round(100*time.Millisecond))
	f.servedOnce(t)
	for _, h := range f.hosts {
		waitHost(t, h, "True")
	}
}

// servedOnce checks every Sandbox of the namespace (checkServed), and that no
// container on any host serves a Sandbox that does not exist.
func (f *fleetRun) servedOnce(t *testing.T) {
	t.Helper()
	sbs, s := f.sandboxes(t), f.served(t)
	uids := map[string]bool{}
	for _, sb := range sbs {
		uids[sb.Metadata.UID] = true
		f.checkServed(t, sb, s)
	}
	for host, byUID := range s {
		for uid, byEngine := range byUID {
			if !uids[uid] {
				t.Errorf("%s: containers of no Sandbox (uid %s): %v", host, uid, byEngine)
			}
		}
	}
}

// nothingLeft: every Sandbox deleted, no container or volume of theirs is left on
// any host, and the DockerHosts, with nothing bound, can be deleted.
func (f *fleetRun) nothingLeft(t *testing.T) {
	kubectl(t, "delete", "sandboxes", "--all", "-n", f.ns, "--timeout=120s")
	for _, h := range f.hosts {
		if left := h.containers(t, "sandbox.roboco.io/namespace="+f.ns); len(left) > 0 {
			t.Errorf("%s: containers left: %v", h.name, left)
		}
	}
	for _, h := range []*fleetHost{f.b, f.c} {
		if owners := ids(h.containers(t, testLabel+"="+runID)); len(owners) > 0 {
			h.docker(t, append([]string{"rm", "-fv"}, owners...)...)
		}
		if left := h.containers(t); len(left) > 0 {
			t.Errorf("%s: containers left: %v", h.name, left)
		}
		if vols := strings.Fields(h.docker(t, "volume", "ls", "-q")); len(vols) > 0 {
			t.Errorf("%s: volumes left: %v", h.name, vols)
		}
	}
	testenv.NoVolumesLeaked(t, f.volumes)
	kubectl(t, "delete", "dockerhost", f.b.name, f.c.name, "--timeout=60s")
}

// release lets go of what a failed step left: the namespace's Sandboxes and the
// test's DockerHosts lose their finalizers (the managers have stopped; the
// daemons' teardown removes what they held on them, TestMain what is on the
// main one) and are deleted.
func (f *fleetRun) release(t *testing.T) {
	unfinalize := func(list []string, scope ...string) {
		for _, obj := range strings.Fields(kubectlTry(append([]string{"get", "-o", "name"}, list...)...)) {
			kubectlTry(append([]string{"patch", obj, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`}, scope...)...)
			kubectlTry(append([]string{"delete", obj, "--wait=false", "--ignore-not-found"}, scope...)...)
		}
	}
	unfinalize([]string{"sandboxes", "-n", f.ns}, "-n", f.ns)
	unfinalize([]string{"dockerhosts", "-l", testLabel + "=" + runID})
}

// kubectlTry runs kubectl, for a cleanup that goes on whatever fails.
func kubectlTry(args ...string) string {
	out, _ := env.Kubectl(args...)
	return out
}
