package lease

import (
	"context"
	"errors"
	"testing"
)

// A replica whose renewals could not reach the API server for longer than its
// hold (an API server restart) stops acting on the host, and its controllers
// drop the passes they are asked for meanwhile. When a renewal lands again
// (nobody took the Lease: it still names this replica), the host is its own
// again, and what is bound to it is looked at again (OnAcquire), as on a
// Lease taken: a pass dropped during the lapse waited for an unrelated event
// (minutes, in the chaos run).
func TestLeaseRenewedAfterALapseWakesTheHost(t *testing.T) {
	table, _ := leaseReplica(t, &answerLost{}, "h")
	var woken []string
	table.OnAcquire = func(host string) { woken = append(woken, host) }
	down := errors.New("the API server does not answer")
	hosts := table.Hosts
	table.Hosts = func(context.Context) ([]string, error) { return nil, down }
	if err := table.round(context.Background()); !errors.Is(err, down) {
		t.Fatalf("a round with the API server down: %v", err)
	}
	// The hold lapses while rounds fail.
	table.mu.Lock()
	h := table.held["h"]
	h.renewed = h.renewed.Add(-table.Config.Duration)
	table.held["h"] = h
	table.mu.Unlock()
	if table.Holds("h") {
		t.Fatal("the replica still acts on h after its hold lapsed")
	}
	table.Hosts = hosts
	if err := table.round(context.Background()); err != nil {
		t.Fatalf("the round once the API server is back: %v", err)
	}
	if !table.Holds("h") {
		t.Fatal("the replica does not drive h again, though its Lease still names it")
	}
	if len(woken) != 1 || woken[0] != "h" {
		t.Errorf("hosts looked at again after the lapse: %v, want [h]", woken)
	}
}
