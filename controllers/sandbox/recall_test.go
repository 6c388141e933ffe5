package sandbox

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Waits for a container to run and failed probes share one pace per container; the
// deadline counts from the first failed probe only, and a new container starts afresh.
func TestProbePaceIsPerContainer(t *testing.T) {
	m := newRecalls()
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "u1"}}
	if got := m.notRunning(sb, "postgres", "c1"); got != 50*time.Millisecond {
		t.Errorf("first look: next in %s, want 50ms", got)
	}
	beforeProbe := time.Now()
	_, since, next := m.probeFailed(sb, "postgres", "c1", time.Minute)
	if next <= 50*time.Millisecond || next > 60*time.Millisecond {
		t.Errorf("second look: next in %s, want a little over 50ms", next)
	}
	if since.Before(beforeProbe) {
		t.Errorf("deadline counted from %s, before the first probe (%s)", since, beforeProbe)
	}
	if _, _, next := m.probeFailed(sb, "redis", "c2", time.Minute); next != 50*time.Millisecond {
		t.Errorf("another service's first probe: next in %s, want 50ms", next)
	}
	if _, _, next := m.probeFailed(sb, "postgres", "c3", time.Minute); next != 50*time.Millisecond {
		t.Errorf("a new container's first probe: next in %s, want 50ms", next)
	}
	for range 40 {
		_, _, next = m.probeFailed(sb, "postgres", "c3", time.Minute)
	}
	if next != probeInterval {
		t.Errorf("after 40 failed probes: next in %s, want the cap %s", next, probeInterval)
	}
}
