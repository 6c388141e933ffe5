package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mobyclient "github.com/moby/moby/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// TestNoPasswordInInspectOrArgv: a trio made by the controller on the real
// engine, with every capability dropped but its engine's few, answers the
// Secret's passwords, while neither docker inspect (Env, Cmd, Path, Args) nor
// any process's command line in its containers shows them.
func TestNoPasswordInInspectOrArgv(t *testing.T) {
	h := newHost(t)
	cp := startControlPlane(t, h)
	ctx := context.Background()
	sb := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "it", Name: "secrets"},
		Spec: sandboxv1.SandboxSpec{AgentID: "it-pw-" + runID, Owner: &sandboxv1.OwnerSpec{Policy: sandboxv1.OwnerPolicyNone},
			Services: []sandboxv1.ServiceSpec{{Engine: "postgres"}, {Engine: "redis"}, {Engine: "mongo"}}},
	}
	if err := cp.client.Create(ctx, sb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteSandbox(t, cp, sb) })
	got := waitFor(t, cp, sb, "Ready", func(s *sandboxv1.Sandbox) bool {
		return meta.IsStatusConditionTrue(s.Status.Conditions, sandboxv1.ConditionReady)
	})
	secret := &corev1.Secret{}
	if err := cp.client.Get(ctx, client.ObjectKey{Namespace: sb.Namespace, Name: got.Status.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	passwords := map[string]string{}
	for _, s := range got.Status.Services {
		e, _ := engine.Lookup(string(s.Engine))
		passwords[e.Name()] = string(secret.Data[e.PasswordKey()])
	}
	connectAll(t, h, cp, sb, passwords)
	noPasswordShown(t, h, got, passwords)
}

// noPasswordShown fails when docker inspect or a process's command line in one
// of sb's containers shows a password.
func noPasswordShown(t *testing.T, h *host, sb *sandboxv1.Sandbox, passwords map[string]string) {
	t.Helper()
	ctx := context.Background()
	for _, s := range sb.Status.Services {
		res, err := h.cli.ContainerInspect(ctx, s.ContainerID, mobyclient.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Container
		inspected := fmt.Sprint(c.Config.Env, c.Config.Cmd, c.Config.Entrypoint, c.Path, c.Args)
		argv := commandLines(t, h, s.ContainerID)
		t.Logf("%s: %d processes: %s", s.Engine, len(argv), strings.Join(argv, " | "))
		for _, pw := range passwords {
			if strings.Contains(inspected, pw) {
				t.Errorf("%s: docker inspect shows a password: %s", s.Engine, inspected)
			}
			for _, line := range argv {
				if strings.Contains(line, pw) {
					t.Errorf("%s: a process's command line shows a password: %s", s.Engine, line)
				}
			}
		}
	}
}

// commandLines are the command lines of every process in the container.
func commandLines(t *testing.T, h *host, id string) []string {
	t.Helper()
	res, err := h.driver.Exec(context.Background(), id, dd.ExecSpec{Cmd: []string{"sh", "-c",
		`for f in /proc/[0-9]*/cmdline; do { tr '\000' ' ' <"$f"; } 2>/dev/null; echo; done`}, OutputLimit: 64 << 10})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("listing processes: exit %d, %v: %s", res.ExitCode, err, res.Stderr)
	}
	var lines []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no process listed")
	}
	return lines
}

// TestMongoInitKeepsThePasswordOffCommandLines: while the mongo image's entrypoint
// initializes (its temporary server, the mongosh runs that check the root user and
// run the init scripts), no process's command line shows the password. An init
// script samples every command line in the background (cheaply: the service's
// CPU limit is shared) while a second one runs in
// mongosh; mongosh hides credentials in its process title only once Node.js has
// booted, so the sampler sees the command line it was started with. The
// entrypoint sources the sampler under set -e and pipefail: a process that ends
// while cat reads it (the entrypoint's own date, at once) fails a sample, which
// must not end the sampling.
func TestMongoInitKeepsThePasswordOffCommandLines(t *testing.T) {
	h := newHost(t)
	network := h.network(t)
	e, _ := engine.Lookup("mongo")
	password, _ := engine.NewPassword()
	sampler := dd.File{Path: "/docker-entrypoint-initdb.d/0-sample.sh", Mode: 0o444, Content: []byte(`
( for i in $(seq 1200); do
	{ cat /proc/[0-9]*/cmdline | tr '\000' ' '; echo; } 2>/dev/null >>/tmp/init-cmdlines || :
	sleep 0.1
done ) &
`)}
	script := dd.File{Path: "/docker-entrypoint-initdb.d/1-init.js", Mode: 0o444, Content: []byte(`db.sandbox_init.insertOne({ok: 1});`)}
	c := h.runEngine(t, e, images(t).Plain["mongo"], network, password, nil, nil, sampler, script)
	// Note: init boots Node.js several times; a loaded host takes its time.
	testenv.WaitFor(t, 6*time.Minute, time.Second, "init to complete", func() bool {
		logs, _ := h.driver.LogsTail(context.Background(), c.ID, 50)
		return strings.Contains(logs, "init process complete")
	})
	record, err := h.driver.Exec(context.Background(), c.ID, dd.ExecSpec{Cmd: []string{"sh", "-c", "sort -u /tmp/init-cmdlines"}, OutputLimit: 64 << 10})
	if err != nil || record.ExitCode != 0 {
		t.Fatalf("no record of the command lines: exit %d, %v: %s", record.ExitCode, err, record.Stderr)
	}
	t.Logf("command lines during init:\n%s", record.Stdout)
	if !strings.Contains(record.Stdout, "mongosh") {
		t.Fatalf("the sampler never saw mongosh run the init script: %q", record.Stdout)
	}
	if strings.Contains(record.Stdout, password) {
		t.Errorf("a command line during init shows the password")
	}
	if strings.Contains(strings.Join(commandLines(t, h, c.ID), "\n"), password) {
		t.Errorf("a command line of the running server shows the password")
	}
}
