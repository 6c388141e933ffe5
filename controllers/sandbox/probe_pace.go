package sandbox

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// probeBackoff paces the looks at a container that is not ready yet (not running,
// no address, or its probe failed): 50ms after the first, ×1.2 after each, at most
// probeInterval. A service is thus noticed at most 50ms plus a fifth of the time
// already waited after it answers (a fixed 1s noticed it up to a second late), at
// the cost of about 17 looks before the 1s pace instead of 5: at most ~75 probes
// in a service's first minute, 60 in each after. Note: a pass probes every service
// not ready yet, so the quickest pace of a Sandbox's services drives them all;
// each probe counts as a look on its own container, so all of them slow down.
var probeBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 1.2, Cap: probeInterval, Steps: math.MaxInt32}

// minProbeAttempts is how many failed probes, spanning the engine's deadline, it
// takes to judge that a service did not answer in time: a pass delayed in the
// queue past the deadline has probed once, late, and that is no timeout.
const minProbeAttempts = 3

// probeAttempts are the looks at one container before it answered.
type probeAttempts struct {
	containerID string
	// looks counts every one (they pace the next); failed counts the failed
	// probes among them and first is when the first failed (they judge the
	// deadline).
	looks, failed int
	first         time.Time
}

// look records a look at containerID that found it not ready; a new container
// starts afresh. Callers hold m.mu.
func (m *memory) look(sb *sandboxv1.Sandbox, engineName, containerID string) *probeAttempts {
	rec := m.of(sb)
	a := rec.probes[engineName]
	if a == nil || a.containerID != containerID {
		a = &probeAttempts{containerID: containerID}
		rec.probes[engineName] = a
	}
	a.looks++
	return a
}

// notRunning records a look at a container that does not run yet or has no
// address, and returns when to look again.
func (m *memory) notRunning(sb *sandboxv1.Sandbox, engineName, containerID string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return host.Delay(probeBackoff, m.look(sb, engineName, containerID).looks-1)
}

// probeFailed records a failed probe of containerID and reports whether the
// service's attempts now span its deadline, since when it has been probed, and
// when to probe again (before the deadline).
func (m *memory) probeFailed(sb *sandboxv1.Sandbox, engineName, containerID string, deadline time.Duration) (timedOut bool, since time.Time, next time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.look(sb, engineName, containerID)
	if a.failed == 0 {
		a.first = time.Now()
	}
	a.failed++
	return a.failed >= minProbeAttempts && time.Since(a.first) >= deadline, a.first, host.Delay(probeBackoff, a.looks-1)
}
