package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestUpgradeReplacesNoRunningContainer: a trio made by the previous release
// (passwords in Env and Cmd, no hardening) keeps running under the new manager,
// same container IDs, Ready, same credentials, a table in postgres intact, and
// is reported behind; only a rollout asked for replaces the containers (and, by
// design, their data goes).
func TestUpgradeReplacesNoRunningContainer(t *testing.T) {
	h := newHost(t)
	cp := newControlPlane(t, h)
	ctx := context.Background()
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "it", Name: "upgrade"},
		Spec: sandboxv1.SandboxSpec{AgentID: "it-up-" + runID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{{Engine: "postgres"}, {Engine: "redis"}, {Engine: "mongo"}}},
	}
	if err := cp.client.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeContainers(t, h, sb) }) // whatever the manager left, e.g. when a step failed before it ran

	// The previous release's state: its Secret, its containers, an agent's table.
	old := previousRelease{cp: cp, sb: sb}
	passwords, ids := map[string]string{}, map[string]string{}
	for _, s := range sb.Spec.Services {
		e, _ := engine.Lookup(string(s.Engine))
		passwords[e.Name()], _ = engine.NewPassword()
		ids[e.Name()] = old.create(t, h, e, passwords[e.Name()])
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: sb.Name + "-sandbox", Labels: map[string]string{controllers.SecretLabel: sb.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sb, sandboxv1.GroupVersion.WithKind("Sandbox"))}},
		Data: old.secret(passwords),
	}
	if err := cp.client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	pg, _ := engine.Lookup("postgres")
	pgContainer, err := h.driver.Inspect(ctx, ids["postgres"])
	if err != nil {
		t.Fatal(err)
	}
	h.probeUntilReady(t, pg, pgContainer, cp.network, passwords["postgres"], 200*time.Millisecond)
	psql(t, h, pgContainer, cp.network, passwords["postgres"], "CREATE TABLE agent_work (n int); INSERT INTO agent_work VALUES (42)")

	quota := previousQuota(t, cp, sb)

	cp.start(t, h.driver)
	t.Cleanup(func() { deleteSandbox(t, cp, sb) })
	got := waitFor(t, cp, sb, "Ready and reported behind", func(s *sandboxv1.Sandbox) bool {
		return meta.IsStatusConditionTrue(s.Status.Conditions, sandboxv1.ConditionReady) &&
			meta.IsStatusConditionFalse(s.Status.Conditions, sandboxv1.ConditionUpToDate) && len(s.Status.Services) == 3
	})
	t.Logf("UpToDate: %s", meta.FindStatusCondition(got.Status.Conditions, sandboxv1.ConditionUpToDate).Message)
	for _, s := range got.Status.Services {
		if s.ContainerID != ids[string(s.Engine)] || !s.Ready || !s.Outdated || s.Restarts != 0 {
			t.Errorf("%s: %+v; want the previous release's container %s, ready, outdated, no restart", s.Engine, s, ids[string(s.Engine)])
		}
	}
	if n := len(ourContainers(t, h, sb)); n != 3 {
		t.Errorf("%d containers of the Sandbox, want the previous release's 3", n)
	}
	if out := psql(t, h, pgContainer, cp.network, passwords["postgres"], "SELECT n FROM agent_work"); out != "42" {
		t.Errorf("the agent's table reads %q after the upgrade, want 42", out)
	}
	connectAll(t, h, cp, sb, passwords)
	countedOnce(t, cp, quota, sb)

	// The rollout, asked for: new containers, same credentials, and the data gone.
	got.Spec.UpdateStrategy = sandboxv1.UpdateRollingUpdate
	if err := cp.client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, cp, sb, "rolled out, Ready and up to date", func(s *sandboxv1.Sandbox) bool {
		replaced := !slices.ContainsFunc(s.Status.Services, func(svc sandboxv1.ServiceStatus) bool {
			return svc.ContainerID == ids[string(svc.Engine)] || svc.Outdated || !svc.Ready
		})
		return replaced && meta.IsStatusConditionTrue(s.Status.Conditions, sandboxv1.ConditionReady) &&
			meta.IsStatusConditionTrue(s.Status.Conditions, sandboxv1.ConditionUpToDate)
	})
	for _, s := range got.Status.Services {
		if s.Restarts != 0 {
			t.Errorf("%s: a rollout counted as %d restarts", s.Engine, s.Restarts)
		}
	}
	connectAll(t, h, cp, sb, passwords)
	noPasswordShown(t, h, got, passwords)
	pgContainer, _ = h.driver.Inspect(ctx, got.Status.Services[0].ContainerID)
	if out := psqlErr(h, pgContainer, cp.network, passwords["postgres"], "SELECT n FROM agent_work"); !strings.Contains(out, "does not exist") {
		t.Errorf("after the rollout the table reads %q; a rollout makes a new, empty container", out)
	}
}

// previousQuota is a SandboxQuota as the previous release left it: its ledger
// (status.admitted) holding one entry for sb, whose status records none.
func previousQuota(t *testing.T, cp *controlPlane, sb *sandboxv1.Sandbox) *sandboxv1.SandboxQuota {
	t.Helper()
	ctx := context.Background()
	q := &sandboxv1.SandboxQuota{ObjectMeta: metav1.ObjectMeta{Namespace: sb.Namespace, Name: "upgrade"},
		Spec: sandboxv1.SandboxQuotaSpec{Hard: sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](5)}}}
	if err := cp.client.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.client.Delete(context.Background(), q) })
	mem := resource.MustParse("768Mi")
	q.Status.Admitted = []sandboxv1.QuotaAdmission{{UID: sb.UID, Kind: "Sandbox", Name: sb.Name, Sandboxes: 1, Memory: &mem}}
	q.Status.Used = sandboxv1.QuotaAmounts{Sandboxes: ptr.To[int32](1), Memory: &mem}
	if err := cp.client.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	return q
}

// countedOnce: after the upgrade the quota counts sb once, at what sb's own
// status now records (the earlier release's entry, recorded, may stay until
// the quota's figures change).
func countedOnce(t *testing.T, cp *controlPlane, q *sandboxv1.SandboxQuota, sb *sandboxv1.Sandbox) {
	t.Helper()
	got, cur := &sandboxv1.SandboxQuota{}, &sandboxv1.Sandbox{}
	testenv.WaitFor(t, time.Minute, poll, "the quota counting the Sandbox once, from its status", func() bool {
		if cp.client.Get(context.Background(), client.ObjectKeyFromObject(q), got) != nil ||
			cp.client.Get(context.Background(), client.ObjectKeyFromObject(sb), cur) != nil || cur.Status.Admitted == nil {
			return false
		}
		u := got.Status.Used
		return len(got.Status.Admitted) <= 1 && u.Sandboxes != nil && *u.Sandboxes == 1 && u.Memory != nil &&
			u.Memory.Cmp(*cur.Status.Admitted.Memory) == 0
	})
	t.Logf("quota after the upgrade: %s", got.Status.Summary)
}

// waitFor polls the Sandbox until cond holds.
func waitFor(t *testing.T, cp *controlPlane, sb *sandboxv1.Sandbox, what string, cond func(*sandboxv1.Sandbox) bool) *sandboxv1.Sandbox {
	t.Helper()
	got := &sandboxv1.Sandbox{}
	testenv.WaitFor(t, 3*time.Minute, poll, what, func() bool {
		return cp.client.Get(context.Background(), client.ObjectKeyFromObject(sb), got) == nil && cond(got)
	})
	return got
}

// connectAll proves every service answers the given passwords with its real client.
func connectAll(t *testing.T, h *host, cp *controlPlane, sb *sandboxv1.Sandbox, passwords map[string]string) {
	t.Helper()
	for _, c := range ourContainers(t, h, sb) {
		e, _ := engine.Lookup(c.Labels[shost.LabelEngine])
		inspected, err := h.driver.Inspect(context.Background(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		connect(t, e, inspected.Networks[cp.network].IPAddress, passwords[e.Name()])
	}
}

func ourContainers(t *testing.T, h *host, sb *sandboxv1.Sandbox) []dd.ContainerSummary {
	t.Helper()
	list, err := h.driver.List(context.Background(), map[string]string{shost.LabelUID: string(sb.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// psql runs sql as the sandbox user in c over TCP and returns its output.
func psql(t *testing.T, h *host, c dd.Container, network, password, sql string) string {
	t.Helper()
	res, err := h.driver.Exec(context.Background(), c.ID, psqlExec(c, network, password, sql))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("psql %q: exit %d, %v: %s", sql, res.ExitCode, err, res.Stderr)
	}
	return strings.TrimSpace(res.Stdout)
}

func psqlErr(h *host, c dd.Container, network, password, sql string) string {
	res, err := h.driver.Exec(context.Background(), c.ID, psqlExec(c, network, password, sql))
	return fmt.Sprint(res.Stdout, res.Stderr, err)
}

func psqlExec(c dd.Container, network, password, sql string) dd.ExecSpec {
	return dd.ExecSpec{Cmd: []string{"psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", c.Networks[network].IPAddress,
		"-U", "sandbox", "-d", "sandbox", "-c", sql}, Env: map[string]string{"PGPASSWORD": password}, Timeout: 10 * time.Second}
}

// removeContainers removes every container of sb.
func removeContainers(t *testing.T, h *host, sb *sandboxv1.Sandbox) {
	for _, c := range ourContainers(t, h, sb) {
		if err := h.driver.Remove(context.Background(), c.ID, time.Second); err != nil {
			t.Errorf("removing %s: %v", c.Name, err)
		}
	}
}

// deleteSandbox deletes sb and waits until the controller has torn it down.
func deleteSandbox(t *testing.T, cp *controlPlane, sb *sandboxv1.Sandbox) {
	if err := cp.client.Delete(context.Background(), sb); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting %s: %v", sb.Name, err)
		return
	}
	testenv.WaitFor(t, 2*time.Minute, poll, "the Sandbox torn down", func() bool {
		err := cp.client.Get(context.Background(), client.ObjectKeyFromObject(sb), &sandboxv1.Sandbox{})
		return client.IgnoreNotFound(err) == nil && err != nil
	})
}
