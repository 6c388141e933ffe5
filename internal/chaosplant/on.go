//go:build chaos_plant

package chaosplant

import (
	"os"
	"sync"
	"syscall"
)

var (
	planted = os.Getenv(Env)
	mu      sync.Mutex
	seen    = map[string]bool{}
)

// Active says whether the bug is the one planted.
func Active(bug string) bool { return bug == planted }

// FirstSight says, while bug is planted, whether this process sees key for the
// first time (later calls with it say false).
func FirstSight(bug, key string) bool {
	if !Active(bug) {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	first := !seen[key]
	seen[key] = true
	return first
}

// CrashAfter kills this process with SIGKILL after step when CrashEnv names it:
// a test's way to stop the manager between two steps of one pass.
func CrashAfter(step string) {
	if step == os.Getenv(CrashEnv) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Hold blocks its caller for good when CrashEnv names step: the step never
// happens in this process, which a later crash point ends.
func Hold(step string) {
	if step == os.Getenv(CrashEnv) {
		select {}
	}
}
