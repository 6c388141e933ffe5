package testenv

import (
	"os"
	"slices"
	"strconv"
	"testing"
)

// A daemon this process started is stale only once it is torn down: a test
// running in parallel with another of the same process must not remove the
// other's daemons. One whose owner file names this pid but that this process
// never claimed is a killed run's (its pid came round again).
func TestStaleDockerdsLeavesThisProcessesLiveDaemonsBe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("owner files live under /run: needs root")
	}
	prefix := "sbxstale" + strconv.Itoa(os.Getpid()) + "-"
	d := NewDockerd(prefix+"a", "unused", "", t.TempDir(), "")
	t.Cleanup(func() { _ = os.Remove(d.ownerFile()); live.Delete(d.Name) })
	d.claim()
	if got := StaleDockerds(prefix); slices.Contains(got, d.Name) {
		t.Errorf("StaleDockerds = %v while this process runs the daemon, want it left be", got)
	}
	live.Delete(d.Name) // as if an earlier process of this pid had written the file
	if got := StaleDockerds(prefix); !slices.Contains(got, d.Name) {
		t.Errorf("StaleDockerds = %v, want the daemon this process never claimed", got)
	}
}
