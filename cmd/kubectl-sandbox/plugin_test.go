package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// run runs the plugin as `kubectl sandbox ARGS...` against the test control plane.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", env.Kubeconfig()}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// sandboxIn makes a Sandbox as the controller would leave it: status written,
// Ready or Stalled, its Secret and an event.
func sandboxIn(t *testing.T, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	cs := versioned.NewForConfigOrDie(env.Config)
	core := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	sb, err := cs.SandboxV1alpha1().Sandboxes(ns).Create(ctx, &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: sandboxv1.SandboxSpec{AgentID: name, Services: []sandboxv1.ServiceSpec{{Engine: sandboxv1.EnginePostgres}, {Engine: sandboxv1.EngineRedis}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	sb.Status.ObservedGeneration = sb.Generation
	sb.Status.SecretName = sandboxv1.SecretName(sb)
	sb.Status.Services = []sandboxv1.ServiceStatus{{Engine: sandboxv1.EnginePostgres, ContainerName: "roboco-sandbox-pg-" + name,
		Host: "roboco-sandbox-pg-" + name, Port: 5432, Ready: ready}, {Engine: sandboxv1.EngineRedis, Ready: true, Restarts: 2}}
	cond := metav1.Condition{Type: sandboxv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "postgres,redis ready", ObservedGeneration: sb.Generation, LastTransitionTime: now}
	if !ready {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Failed", "postgres: name taken"
		sb.Status.Conditions = append(sb.Status.Conditions, metav1.Condition{Type: sandboxv1.ConditionStalled, Status: metav1.ConditionTrue,
			Reason: "NameConflict", Message: "remove the container holding roboco-sandbox-pg-" + name, ObservedGeneration: sb.Generation, LastTransitionTime: now})
	}
	sb.Status.Conditions = append(sb.Status.Conditions, cond)
	if sb, err = cs.SandboxV1alpha1().Sandboxes(ns).UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sandboxv1.SecretName(sb)}, Data: map[string][]byte{
		sandboxv1.PostgresPasswordKey: []byte(`it's "odd" $x`), sandboxv1.PostgresHostKey: []byte("roboco-sandbox-pg-" + name)}}
	if _, err := core.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "."}, Type: corev1.EventTypeNormal, Reason: "Provisioned",
		Message: "postgres: container started", LastTimestamp: now, FirstTimestamp: now,
		InvolvedObject: corev1.ObjectReference{Kind: "Sandbox", APIVersion: sandboxv1.GroupVersion.String(), Namespace: ns, Name: name, UID: sb.UID}}
	if _, err := core.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPlugin(t *testing.T) {
	sandboxIn(t, "team-a", "be-dev-1", true)
	sandboxIn(t, "team-b", "be-dev-2", false)

	t.Run("get shows each service's state", func(t *testing.T) {
		out, err := run(t, "-n", "team-a", "get")
		if err != nil || !strings.Contains(out, "be-dev-1") || !strings.Contains(out, "postgres:ready,redis:ready(2 restarts)") ||
			!strings.Contains(out, "True") || strings.Contains(out, "be-dev-2") {
			t.Errorf("get: %v\n%s", err, out)
		}
	})
	t.Run("list -A has the namespace column", func(t *testing.T) {
		out, err := run(t, "list", "-A")
		if err != nil || !strings.HasPrefix(out, "NAMESPACE") || !strings.Contains(out, "team-b") || !strings.Contains(out, "postgres:starting") {
			t.Errorf("list -A: %v\n%s", err, out)
		}
	})
	t.Run("get NAME -o json", func(t *testing.T) {
		out, err := run(t, "-n", "team-a", "get", "be-dev-1", "-o", "json")
		var sb sandboxv1.Sandbox
		if err != nil || json.Unmarshal([]byte(out), &sb) != nil || sb.Kind != "Sandbox" || sb.Spec.AgentID != "be-dev-1" {
			t.Errorf("-o json: %v\n%s", err, out)
		}
		if _, err := run(t, "-n", "team-a", "get", "nope"); err == nil || !strings.Contains(err.Error(), `"nope" not found`) {
			t.Errorf("get of a missing Sandbox: %v", err)
		}
	})
	t.Run("env as shell exports and as .env", func(t *testing.T) {
		out, err := run(t, "-n", "team-a", "env", "be-dev-1")
		want := "export ROBOCO_TEST_DB_HOST='roboco-sandbox-pg-be-dev-1'\nexport ROBOCO_TEST_DB_PASSWORD='it'\\''s \"odd\" $x'\n"
		if err != nil || out != want {
			t.Errorf("env: %v\n%q\nwant\n%q", err, out, want)
		}
		out, err = run(t, "-n", "team-a", "env", "be-dev-1", "--format", "dotenv")
		want = "ROBOCO_TEST_DB_HOST=roboco-sandbox-pg-be-dev-1\nROBOCO_TEST_DB_PASSWORD=\"it's \\\"odd\\\" \\$x\"\n"
		if err != nil || out != want {
			t.Errorf("env --format dotenv: %v\n%q\nwant\n%q", err, out, want)
		}
		if _, err := run(t, "-n", "team-a", "env", "be-dev-1", "--format", "yaml"); err == nil || !strings.Contains(err.Error(), "shell or dotenv") {
			t.Errorf("a bad format: %v", err)
		}
	})
	t.Run("wait returns at once when Ready, and fails with what to change when Stalled", func(t *testing.T) {
		start := time.Now()
		out, err := run(t, "-n", "team-a", "wait", "be-dev-1", "--timeout", "20s")
		if err != nil || !strings.Contains(out, "sandbox/be-dev-1 is Ready; credentials in Secret be-dev-1-sandbox") || time.Since(start) > 15*time.Second {
			t.Errorf("wait: %v\n%s", err, out)
		}
		_, err = run(t, "-n", "team-b", "wait", "be-dev-2", "--timeout", "20s")
		if err == nil || !strings.Contains(err.Error(), "stalled (NameConflict): remove the container holding roboco-sandbox-pg-be-dev-2") {
			t.Errorf("wait on a stalled Sandbox: %v", err)
		}
	})
	t.Run("describe shows services, conditions and events", func(t *testing.T) {
		out, err := run(t, "-n", "team-b", "describe", "be-dev-2")
		for _, want := range []string{"Agent:", "be-dev-2", "roboco-sandbox-pg-be-dev-2:5432", "Stalled", "NameConflict",
			"remove the container holding", "Provisioned", "postgres: container started"} {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("describe lacks %q: %v\n%s", want, err, out)
				break
			}
		}
	})
}
