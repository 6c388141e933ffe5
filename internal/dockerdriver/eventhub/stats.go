package eventhub

import (
	"slices"
	"strings"
)

// counts are one subscriber name's losses, cumulative over the hub's life.
type counts struct {
	dropped, overflows uint64
}

// Stats describes the subscribers of one name. Names should be unique per
// consumer; the figures of subscribers sharing a name are summed.
type Stats struct {
	Name string
	// Subscribers is how many subscribers of this name are live now.
	Subscribers int
	// Pending is how many events and signals wait for them now, including
	// one each may be handing over.
	Pending int
	// Behind is how many of them are between an EventLost and its EventResync.
	Behind int
	// Dropped counts the events lost to overflow since New (monotonic,
	// across Stop and Start): a counter to export.
	Dropped uint64
	// Overflows counts the times a subscriber fell behind by overflow since New.
	Overflows uint64
}

// Stats returns a snapshot per subscriber name ever seen, sorted by name.
func (h *Hub) Stats() []Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	byName := make(map[string]*Stats, len(h.counts))
	for name, c := range h.counts {
		byName[name] = &Stats{Name: name, Dropped: c.dropped, Overflows: c.overflows}
	}
	for sb := range h.last.subs {
		st := byName[sb.name]
		st.Subscribers++
		st.Pending += len(sb.queue)
		if sb.inflight {
			st.Pending++
		}
		if sb.behind {
			st.Behind++
		}
	}
	out := make([]Stats, 0, len(byName))
	for _, st := range byName {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b Stats) int { return strings.Compare(a.Name, b.Name) })
	return out
}
