package main

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// validID is spec.data.id's rule in the CRD.
var validID = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// answerData stands in for the controller on one Sandbox: it watches for the
// next spec.data written, sends it on the channel, and writes the status
// answer makes of it. Its watch starts before it returns, so the plugin's
// patch cannot be missed; no test sleeps.
func answerData(t *testing.T, ns, name string, answer func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest)) <-chan sandboxv1.DataRequest {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sandboxes := versioned.NewForConfigOrDie(env.Config).SandboxV1alpha1().Sandboxes(ns)
	sb, err := sandboxes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sandboxes.Watch(ctx, metav1.ListOptions{ResourceVersion: sb.ResourceVersion,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	seen, finished := make(chan sandboxv1.DataRequest, 1), make(chan struct{})
	t.Cleanup(func() { cancel(); <-finished }) // its error, if any, lands in this test
	go func() {
		defer close(finished)
		defer w.Stop()
		for ev := range w.ResultChan() {
			got, ok := ev.Object.(*sandboxv1.Sandbox)
			if !ok || got.Spec.Data == nil || sb.Spec.Data != nil && got.Spec.Data.ID == sb.Spec.Data.ID {
				continue
			}
			req := *got.Spec.Data
			seen <- req
			answer(got, req)
			// Note: not ctx, which the test's end cancels: the plugin may see this
			// write, and end the test, before the write's own answer is read.
			if _, err := sandboxes.UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
				t.Errorf("writing the answer: %v", err)
			}
			return
		}
	}()
	return seen
}

// did records, as the controller does, that engine e did req in ms (or failed
// with the engine's words), and status.data's phase and message, judged at
// the Sandbox's generation.
func did(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest, e sandboxv1.Engine, ms int64, failed string) {
	for i := range sb.Status.Services {
		s := &sb.Status.Services[i]
		if s.Engine != e {
			continue
		}
		s.ContainerName = cmp.Or(s.ContainerName, "roboco-sandbox-"+string(e)+"-"+sb.Name)
		s.Data = &sandboxv1.ServiceData{RequestID: req.ID, Error: failed}
		if failed == "" {
			op := &sandboxv1.DataOperation{ID: req.ID, Generation: sb.Generation, Time: metav1.Now(), ContainerID: "c-" + string(e), DurationMilliseconds: ms}
			s.Data.LastReset, s.Data.LastCheckpoint, s.Data.LastRestore = op, op, op
		}
	}
	if d := sb.Status.Data; failed != "" || d == nil || d.ID != req.ID {
		sb.Status.Data = &sandboxv1.DataRequestStatus{ID: req.ID, Action: req.Action, Phase: sandboxv1.DataSucceeded, ObservedGeneration: sb.Generation}
	}
	if failed != "" {
		sb.Status.Data.Phase, sb.Status.Data.Message = sandboxv1.DataFailed, failed
	}
}

func TestData(t *testing.T) {
	sandboxIn(t, "team-d", "be-dev-3", true)

	t.Run("checkpoint --service postgres: one patch with a fresh id, the service's line, exit 0", func(t *testing.T) {
		seen := answerData(t, "team-d", "be-dev-3", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 84, "")
		})
		out, err := run(t, "-n", "team-d", "checkpoint", "be-dev-3", "--service", "postgres")
		t.Logf("kubectl sandbox checkpoint be-dev-3 --service postgres:\n%s", out)
		req := <-seen
		if !validID.MatchString(req.ID) || len(req.ID) > 63 || !strings.HasPrefix(req.ID, "checkpoint-") ||
			req.Action != sandboxv1.DataCheckpoint || !slices.Equal(req.Services, []sandboxv1.Engine{sandboxv1.EnginePostgres}) {
			t.Errorf("spec.data written: %+v", req)
		}
		want := "postgres  checkpointed  in 84ms  (container roboco-sandbox-pg-be-dev-3)\nsandbox/be-dev-3 checkpointed (request " + req.ID + ")\n"
		if err != nil || out != want {
			t.Errorf("checkpoint: %v\n%q\nwant\n%q", err, out, want)
		}
	})
	t.Run("restore of every service: the earlier services list dropped, a line each, exit 0", func(t *testing.T) {
		seen := answerData(t, "team-d", "be-dev-3", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 84, "")
			did(sb, req, sandboxv1.EngineRedis, 3, "")
		})
		out, err := run(t, "-n", "team-d", "restore", "be-dev-3")
		t.Logf("kubectl sandbox restore be-dev-3:\n%s", out)
		req := <-seen
		if !strings.HasPrefix(req.ID, "restore-") || req.Action != sandboxv1.DataRestore || len(req.Services) != 0 {
			t.Errorf("spec.data written: %+v", req)
		}
		for _, want := range []string{"postgres  restored  in 84ms  (container roboco-sandbox-pg-be-dev-3)\n",
			"redis     restored  in 3ms   (container roboco-sandbox-redis-be-dev-3)\n", "sandbox/be-dev-3 restored (request " + req.ID + ")\n"} {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("restore lacks %q: %v\n%s", want, err, out)
			}
		}
	})
	t.Run("reset failing on redis: the engine's words, exit 1", func(t *testing.T) {
		const words = "ERR unknown subcommand 'RELOAD'"
		answerData(t, "team-d", "be-dev-3", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 12, "")
			did(sb, req, sandboxv1.EngineRedis, 0, words)
		})
		out, err := run(t, "-n", "team-d", "reset", "be-dev-3", "--service", "postgres,redis")
		t.Logf("kubectl sandbox reset be-dev-3 --service postgres,redis:\n%s%v", out, err)
		if !strings.Contains(out, "postgres  reset   in 12ms  (container roboco-sandbox-pg-be-dev-3)\n") ||
			!strings.Contains(out, "redis     FAILED  "+words+"\n") || strings.Contains(out, "sandbox/be-dev-3 reset") {
			t.Errorf("reset's lines:\n%s", out)
		}
		if err == nil || !regexp.MustCompile(`^sandbox/be-dev-3: reset reset-\S+ failed on redis: `+regexp.QuoteMeta(words)+`$`).MatchString(err.Error()) {
			t.Errorf("reset's error: %v", err)
		}
	})
	t.Run("a timeout says what status.data still waits for", func(t *testing.T) {
		answerData(t, "team-d", "be-dev-3", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			sb.Status.Data = &sandboxv1.DataRequestStatus{ID: req.ID, Action: req.Action, Phase: sandboxv1.DataRunning,
				ObservedGeneration: sb.Generation, Message: "waiting for postgres (not ready)"}
		})
		_, err := run(t, "-n", "team-d", "reset", "be-dev-3", "--timeout", "2s")
		t.Logf("kubectl sandbox reset be-dev-3 --timeout 2s: %v", err)
		if err == nil || err.Error() != "timed out after 2s: waiting for postgres (not ready)" {
			t.Errorf("reset's timeout: %v", err)
		}
		_, err = run(t, "-n", "team-d", "restore", "be-dev-3", "--timeout", "500ms")
		if err == nil || !regexp.MustCompile(`^timed out after 0.5s: the controller has not taken up restore-\S+ yet`).MatchString(err.Error()) {
			t.Errorf("restore's timeout with no answer: %v", err)
		}
	})
	t.Run("a bad --service is refused with the choices, before any patch", func(t *testing.T) {
		cs := versioned.NewForConfigOrDie(env.Config)
		before, _ := cs.SandboxV1alpha1().Sandboxes("team-d").Get(context.Background(), "be-dev-3", metav1.GetOptions{})
		_, err := run(t, "-n", "team-d", "reset", "be-dev-3", "--service", "postgres", "--service", "mysql")
		if err == nil || err.Error() != `--service "mysql": must be postgres, redis or mongo` {
			t.Errorf("reset --service mysql: %v", err)
		}
		after, _ := cs.SandboxV1alpha1().Sandboxes("team-d").Get(context.Background(), "be-dev-3", metav1.GetOptions{})
		if after.Generation != before.Generation {
			t.Errorf("spec changed: generation %d, was %d", after.Generation, before.Generation)
		}
	})
	t.Run("a service the Sandbox does not run: the API server's message", func(t *testing.T) {
		_, err := run(t, "-n", "team-d", "checkpoint", "be-dev-3", "--service", "mongo")
		if err == nil || !strings.Contains(err.Error(), "data.services must name engines of spec.services") {
			t.Errorf("checkpoint --service mongo: %v", err)
		}
	})
}
