package lanes

import (
	"fmt"
	"slices"
)

// Ticket is what Acquire answers: granted, or where the step waits, with the
// load that keeps it waiting (for a status message).
type Ticket struct {
	Granted bool
	// Asked is how many lanes the step asked for.
	Asked int
	// Namespace is the owner's.
	Namespace string
	// Position is the step's place in its namespace's queue, from 1; 0 once
	// granted.
	Position int
	// HostBusy of HostLanes are taken on the host (Holds may take more);
	// NamespaceBusy of NamespaceLanes by the owner's namespace.
	HostBusy, HostLanes           int
	NamespaceBusy, NamespaceLanes int
}

// ticket is e's ticket; the gate's lock is held.
func (g *Gate) ticket(e *entry) Ticket {
	sp := g.spaces[e.owner.Namespace]
	t := Ticket{
		Granted: e.state != waiting, Asked: e.n, Namespace: e.owner.Namespace,
		HostBusy: g.busy, HostLanes: g.perHost,
		NamespaceBusy: sp.busy, NamespaceLanes: g.perNamespace,
	}
	if !t.Granted {
		t.Position = slices.Index(sp.queue, e) + 1
	}
	return t
}

// String says where the step stands, for a condition's message: "waiting
// for a seed lane: 3rd in namespace a's queue; 4 of 4 host lanes busy".
func (t Ticket) String() string {
	if t.Granted {
		return fmt.Sprintf("%s granted; %d of %d host lanes busy", lanes(t.Asked), t.HostBusy, t.HostLanes)
	}
	s := fmt.Sprintf("waiting for %s: %s in namespace %s's queue; %d of %d host lanes busy",
		lanes(t.Asked), ordinal(t.Position), t.Namespace, t.HostBusy, t.HostLanes)
	if t.NamespaceBusy > 0 && t.NamespaceBusy+t.Asked > t.NamespaceLanes {
		s += fmt.Sprintf(", %d of %d of namespace %s", t.NamespaceBusy, t.NamespaceLanes, t.Namespace)
	}
	return s
}

func lanes(n int) string {
	if n == 1 {
		return "a seed lane"
	}
	return fmt.Sprintf("%d seed lanes", n)
}

// ordinal is 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, ... 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Snapshot is a gate's load, for metrics and tests.
type Snapshot struct {
	PerHost, PerNamespace int
	// Busy lanes on the host, Holds included; Waiting steps.
	Busy, Waiting int
	// Namespaces holds each namespace that runs or waits.
	Namespaces map[string]Load
}

// Load is one namespace's share of a gate.
type Load struct{ Busy, Waiting int }

// Snapshot is g's load now.
func (g *Gate) Snapshot() Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Snapshot{PerHost: g.perHost, PerNamespace: g.perNamespace, Busy: g.busy, Namespaces: map[string]Load{}}
	for ns, sp := range g.spaces {
		if sp.idle() {
			continue
		}
		s.Namespaces[ns] = Load{Busy: sp.busy, Waiting: len(sp.queue)}
		s.Waiting += len(sp.queue)
	}
	return s
}
