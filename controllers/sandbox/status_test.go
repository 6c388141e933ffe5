package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Parts a service reports at each stage.
var (
	present  = okPart(sandboxv1.ReasonPresent)
	running  = okPart(sandboxv1.ReasonRunning)
	answers  = okPart(sandboxv1.ReasonReady)
	pulling  = part{reason: sandboxv1.ReasonPulling, message: "pulling 40%"}
	noImage  = part{reason: sandboxv1.ReasonCreating, message: "waiting for the image"}
	creating = part{reason: sandboxv1.ReasonCreating, message: "creating the container"}
	probing  = part{reason: sandboxv1.ReasonProbing, message: "waiting for the container"}
)

func service(engine string, images, containers, probes part) serviceResult {
	return serviceResult{status: sandboxv1.ServiceStatus{Engine: sandboxv1.Engine(engine)}, images: images, containers: containers, probes: probes}
}

func failed(reason, message string) part { return part{reason: reason, message: message} }

// sandboxAt is a Sandbox at generation 3 whose previous pass left it retrying
// and stalled, so that every test sees which of those a pass clears.
func sandboxAt() *sandboxv1.Sandbox {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "be-dev-1", Generation: 3}}
	for _, t := range []string{sandboxv1.ConditionReconciling, sandboxv1.ConditionStalled} {
		meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Earlier", ObservedGeneration: 2})
	}
	return sb
}

// cond renders a condition as "Status/Reason", or "absent".
func cond(sb *sandboxv1.Sandbox, t string) string {
	if c := meta.FindStatusCondition(sb.Status.Conditions, t); c != nil {
		return fmt.Sprintf("%s/%s", c.Status, c.Reason)
	}
	return "absent"
}

func TestSummarizeReady(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		results                     []serviceResult
		ready, reconciling, stalled string
		readyMessage                string // contained in Ready's message
	}{
		{"every service answers: Ready, and neither retrying nor stalled",
			[]serviceResult{service("postgres", present, running, answers), service("redis", present, running, answers)},
			"True/Ready", "absent", "absent", "postgres,redis ready; credentials in Secret be-dev-1-sandbox"},
		{"postgres pulling, redis probing: provisioning, on the first stage still in progress",
			[]serviceResult{service("postgres", pulling, noImage, probing), service("redis", present, creating, probing)},
			"False/Provisioning", "True/Pulling", "absent", "postgres: pulling 40%"},
		{"postgres failed to pull while redis probes: Failed, retrying on PullFailed",
			[]serviceResult{service("postgres", failed(sandboxv1.ReasonPullFailed, "manifest unknown"), noImage, probing),
				service("redis", present, running, probing)},
			"False/Failed", "True/PullFailed", "absent", "postgres: manifest unknown"},
		{"a later stage's failure outranks an earlier stage's progress",
			[]serviceResult{service("postgres", present, running, failed(sandboxv1.ReasonProbeTimeout, "no answer in 60s")),
				service("redis", pulling, noImage, probing)},
			"False/Failed", "True/ProbeTimeout", "absent", "postgres: no answer in 60s"},
		{"of two failures, the earlier stage's is named",
			[]serviceResult{service("postgres", failed(sandboxv1.ReasonPullFailed, "denied"), noImage, probing),
				service("redis", present, failed(sandboxv1.ReasonExited, "exit code 1"), probing)},
			"False/Failed", "True/PullFailed", "absent", "postgres: denied"},
		{"Docker not answering keeps its own Ready reason",
			[]serviceResult{service("redis", present, failed(sandboxv1.ReasonDockerUnavailable, "connection refused"), probing)},
			"False/DockerUnavailable", "True/DockerUnavailable", "absent", "redis: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandboxAt()
			summarize(sb, tc.results)
			checkConditions(t, sb, map[string]string{
				sandboxv1.ConditionReady: tc.ready, sandboxv1.ConditionReconciling: tc.reconciling, sandboxv1.ConditionStalled: tc.stalled,
			})
			if msg := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady).Message; !strings.Contains(msg, tc.readyMessage) {
				t.Errorf("Ready says %q, want it to say %q", msg, tc.readyMessage)
			}
			checkGenerations(t, sb)
		})
	}
}

// TestSummarizeStalled: a service no retry can fix stalls the Sandbox: Stalled
// names why, Ready is Failed, and it no longer claims to be retrying.
func TestSummarizeStalled(t *testing.T) {
	sb := sandboxAt()
	conflict := service("postgres", present, failed(sandboxv1.ReasonNameConflict, "sbx-pg-be-dev-1 belongs to another Sandbox"), probing)
	conflict.stalled = true
	summarize(sb, []serviceResult{conflict, service("redis", present, running, answers)})
	checkConditions(t, sb, map[string]string{
		sandboxv1.ConditionReady: "False/Failed", sandboxv1.ConditionStalled: "True/NameConflict", sandboxv1.ConditionReconciling: "absent",
	})
	if msg := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionStalled).Message; !strings.Contains(msg, "belongs to another Sandbox") {
		t.Errorf("Stalled says %q, not why", msg)
	}
	checkGenerations(t, sb)
}

// checkConditions compares conditions by "Status/Reason" ("absent": not set).
func checkConditions(t *testing.T, sb *sandboxv1.Sandbox, want map[string]string) {
	t.Helper()
	for condType, w := range want {
		if got := cond(sb, condType); got != w {
			t.Errorf("%s %s, want %s", condType, got, w)
		}
	}
}

// checkGenerations: every condition says it describes the current spec, so that
// `kubectl wait` does not take a verdict on an older spec for this one's.
func checkGenerations(t *testing.T, sb *sandboxv1.Sandbox) {
	t.Helper()
	if sb.Status.ObservedGeneration != sb.Generation {
		t.Errorf("status.observedGeneration %d, want %d", sb.Status.ObservedGeneration, sb.Generation)
	}
	for _, c := range sb.Status.Conditions {
		if c.ObservedGeneration != sb.Generation {
			t.Errorf("%s has observedGeneration %d, want %d", c.Type, c.ObservedGeneration, sb.Generation)
		}
	}
}

func TestMerge(t *testing.T) {
	images := func(r serviceResult) part { return r.images }
	for _, tc := range []struct {
		name    string
		results []serviceResult
		want    string // Status/Reason
		message string
	}{
		{"all present", []serviceResult{service("postgres", present, running, answers), service("redis", present, running, answers),
			service("mongo", present, running, answers)}, "True/Present", "all 3 services"},
		{"every failing service is named, the present ones are not",
			[]serviceResult{service("postgres", failed(sandboxv1.ReasonPullFailed, "manifest unknown"), noImage, probing),
				service("redis", present, running, answers), service("mongo", pulling, noImage, probing)},
			"False/PullFailed", "postgres: manifest unknown; mongo: pulling 40%"},
		{"a failure outranks progress listed before it",
			[]serviceResult{service("mongo", pulling, noImage, probing), service("postgres", failed(sandboxv1.ReasonPullFailed, "denied"), noImage, probing)},
			"False/PullFailed", "mongo: pulling 40%; postgres: denied"},
		{"of two failures the first listed is named",
			[]serviceResult{service("postgres", failed(sandboxv1.ReasonDockerUnavailable, "refused"), noImage, probing),
				service("redis", failed(sandboxv1.ReasonPullFailed, "denied"), noImage, probing)},
			"False/DockerUnavailable", "postgres: refused; redis: denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandboxAt()
			merge(sb, sandboxv1.ConditionImagesReady, sandboxv1.ReasonPresent, tc.results, images)
			c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionImagesReady)
			if got := cond(sb, sandboxv1.ConditionImagesReady); got != tc.want || c.Message != tc.message {
				t.Errorf("ImagesReady %s %q, want %s %q", got, c.Message, tc.want, tc.message)
			}
			if c.ObservedGeneration != sb.Generation {
				t.Errorf("observedGeneration %d, want %d", c.ObservedGeneration, sb.Generation)
			}
		})
	}
}

// TestDockerDown: a Ready Sandbox whose Docker stops answering is no longer
// Ready, says why (not Failed: nothing of its own is wrong) and retries.
func TestDockerDown(t *testing.T) {
	sb := sandboxAt()
	summarize(sb, []serviceResult{service("redis", present, running, answers)})
	dockerDown(sb, errors.New("dial unix /var/run/docker.sock: connect: no such file or directory"), 4*time.Second)
	checkConditions(t, sb, map[string]string{
		sandboxv1.ConditionReady:             "False/DockerUnavailable",
		sandboxv1.ConditionContainersRunning: "Unknown/DockerUnavailable",
		sandboxv1.ConditionReconciling:       "True/DockerUnavailable",
		sandboxv1.ConditionStalled:           "absent",
	})
	if msg := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady).Message; !strings.Contains(msg, "docker.sock") {
		t.Errorf("Ready says %q, not Docker's error", msg)
	}
	checkGenerations(t, sb)
}

// TestStallAll: a fault of the whole Sandbox (here a foreign Secret in the way)
// stalls it with that reason and stops it claiming to retry.
func TestStallAll(t *testing.T) {
	sb := sandboxAt()
	stallAll(sb, sandboxv1.ReasonSecretConflict, "Secret be-dev-1-sandbox exists and is not this Sandbox's")
	checkConditions(t, sb, map[string]string{
		sandboxv1.ConditionReady: "False/Failed", sandboxv1.ConditionStalled: "True/SecretConflict", sandboxv1.ConditionReconciling: "absent",
	})
	checkGenerations(t, sb)
}
