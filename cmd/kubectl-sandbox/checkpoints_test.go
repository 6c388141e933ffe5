package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func TestNamedCheckpoints(t *testing.T) {
	sandboxIn(t, "team-n", "be-dev-4", true)

	t.Run("checkpoint --name: the name written, then dropped by a restore without one", func(t *testing.T) {
		seen := answerData(t, "team-n", "be-dev-4", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 40, "")
			did(sb, req, sandboxv1.EngineRedis, 5, "")
			sb.Status.Checkpoints = []sandboxv1.SandboxCheckpoint{{Name: "migrated", Time: metav1.NewTime(time.Now().Add(-90 * time.Second)),
				Services: []sandboxv1.Engine{sandboxv1.EnginePostgres, sandboxv1.EngineRedis}, SizeBytes: 7 << 20}}
		})
		out, err := run(t, "-n", "team-n", "checkpoint", "be-dev-4", "--name", "migrated")
		req := <-seen
		if req.Name != "migrated" || req.Action != sandboxv1.DataCheckpoint {
			t.Errorf("spec.data written: %+v", req)
		}
		if err != nil || !strings.HasSuffix(out, "sandbox/be-dev-4 checkpointed checkpoint migrated (request "+req.ID+")\n") {
			t.Errorf("checkpoint --name: %v\n%s", err, out)
		}
		seen = answerData(t, "team-n", "be-dev-4", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 40, "")
			did(sb, req, sandboxv1.EngineRedis, 5, "")
		})
		if _, err := run(t, "-n", "team-n", "restore", "be-dev-4"); err != nil {
			t.Errorf("restore: %v", err)
		}
		if req := <-seen; req.Name != "" {
			t.Errorf("a restore without --name kept the name %q of the request before", req.Name)
		}
	})
	t.Run("checkpoints: a table, -o json, and in describe", func(t *testing.T) {
		out, err := run(t, "-n", "team-n", "checkpoints", "be-dev-4")
		if err != nil || !regexp.MustCompile(`(?m)^NAME +SERVICES +TAKEN +SIZE\nmigrated +postgres,redis +\S+ ago +7\.0MiB$`).MatchString(out) {
			t.Errorf("checkpoints: %v\n%s", err, out)
		}
		out, err = run(t, "-n", "team-n", "checkpoints", "be-dev-4", "-o", "json")
		var list []sandboxv1.SandboxCheckpoint
		if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Name != "migrated" || list[0].SizeBytes != 7<<20 {
			t.Errorf("checkpoints -o json: %v\n%s", err, out)
		}
		out, err = run(t, "-n", "team-n", "describe", "be-dev-4")
		if err != nil || !regexp.MustCompile(`(?m)^Checkpoints:\n +NAME +SERVICES +TAKEN +SIZE\n +migrated +postgres,redis +\S+ ago +7\.0MiB$`).MatchString(out) {
			t.Errorf("describe's checkpoints: %v\n%s", err, out)
		}
		if _, err := run(t, "-n", "team-n", "checkpoints", "be-dev-4", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "must be json") {
			t.Errorf("checkpoints -o yaml: %v", err)
		}
	})
	t.Run("delete-checkpoint needs --name, and reports the engine's words", func(t *testing.T) {
		if _, err := run(t, "-n", "team-n", "delete-checkpoint", "be-dev-4"); err == nil || !strings.Contains(err.Error(), `"name" not set`) {
			t.Errorf("delete-checkpoint without --name: %v", err)
		}
		seen := answerData(t, "team-n", "be-dev-4", func(sb *sandboxv1.Sandbox, req sandboxv1.DataRequest) {
			did(sb, req, sandboxv1.EnginePostgres, 3, "")
			did(sb, req, sandboxv1.EngineRedis, 0, "no checkpoint named gone in this container")
		})
		out, err := run(t, "-n", "team-n", "delete-checkpoint", "be-dev-4", "--name", "gone")
		if req := <-seen; req.Action != sandboxv1.DataDeleteCheckpoint || req.Name != "gone" {
			t.Errorf("spec.data written: %+v", req)
		}
		if err == nil || !strings.Contains(err.Error(), "delete-checkpoint") || !strings.Contains(err.Error(), "no checkpoint named gone") ||
			!strings.Contains(out, "postgres  deleted  done") {
			t.Errorf("delete-checkpoint --name gone: %v\n%s", err, out)
		}
	})
	t.Run("a bad name: the API server's message", func(t *testing.T) {
		if _, err := run(t, "-n", "team-n", "checkpoint", "be-dev-4", "--name", "Bad_Name"); err == nil || !strings.Contains(err.Error(), "data.name must be lowercase") {
			t.Errorf("checkpoint --name Bad_Name: %v", err)
		}
	})
}
