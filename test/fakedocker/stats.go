package fakedocker

import (
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
)

// Stats is what a daemon counted since it was made (across Down and Up).
type Stats struct {
	DaemonID string
	// Requests counts the requests by endpoint, e.g. "POST /containers/create";
	// ByAgent counts them by the client's User-Agent too (which manager asked).
	Requests map[string]int64
	ByAgent  map[string]map[string]int64 `json:",omitempty"`
	// Creates counts the containers created; NameConflicts the creates refused
	// because the name was taken (how the driver learns that it, or another
	// manager, made the container already).
	Creates, NameConflicts int64
	// Duplicates counts the creates that succeeded while a live (created or
	// running) container carried the same DuplicateKeys labels: two containers
	// for one Sandbox service. Must be zero.
	Duplicates int64
	// DuplicateList details the first maxDuplicates of them.
	DuplicateList []Duplicate `json:",omitempty"`
	Execs         int64
	// Downs counts the times the daemon stopped serving (Down, Restart).
	Downs int64
	// Containers counts the containers there are now, by state.
	Containers map[string]int
}

// Duplicate is a container created beside a live one of the same service.
type Duplicate struct {
	Name, ID         string
	Beside, BesideID string
	Labels           map[string]string // the DuplicateKeys labels
	At               time.Time
}

const maxDuplicates = 100

// counters are the daemon's statistics, apart from its lock.
type counters struct {
	mu                                        sync.Mutex
	requests                                  map[string]int64
	byAgent                                   map[string]map[string]int64
	creates, nameConflicts, duplicates, execs int64
	downs                                     int64
	dups                                      []Duplicate
}

func newCounters() counters {
	return counters{requests: map[string]int64{}, byAgent: map[string]map[string]int64{}}
}

func (c *counters) request(endpoint, agent string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[endpoint]++
	if c.byAgent[agent] == nil {
		c.byAgent[agent] = map[string]int64{}
	}
	c.byAgent[agent][endpoint]++
}

func (c *counters) add(n *int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*n++
}

// created counts a create, a duplicate when beside is not nil.
func (c *counters) created(made, beside *ctr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creates++
	if beside == nil {
		return
	}
	c.duplicates++
	if len(c.dups) < maxDuplicates {
		labels := map[string]string{}
		for _, k := range DuplicateKeys {
			labels[k] = made.config.Labels[k]
		}
		c.dups = append(c.dups, Duplicate{Name: made.name, ID: made.id, Beside: beside.name, BesideID: beside.id,
			Labels: labels, At: time.Now()})
	}
}

// live: a container that is, or is about to be, running.
func live(c *ctr) bool {
	return c.state == container.StateCreated || c.state == container.StateRunning ||
		c.state == container.StatePaused || c.state == container.StateRestarting
}

// serviceKey is the DuplicateKeys labels' values together; false when one is
// missing.
func serviceKey(labels map[string]string) (string, bool) {
	vals := make([]string, len(DuplicateKeys))
	for i, k := range DuplicateKeys {
		if vals[i] = labels[k]; vals[i] == "" {
			return "", false
		}
	}
	return strings.Join(vals, "\x00"), true
}

// duplicateOf is a live container of c's service (nil: none, or c has no
// service labels). Callers hold s.mu.
func (s *Server) duplicateOf(c *ctr) *ctr {
	key, ok := serviceKey(c.config.Labels)
	if !ok {
		return nil
	}
	for o := range s.services[key] {
		if o != c && live(o) {
			return o
		}
	}
	return nil
}

// indexService files c under its service (its labels never change), or
// removes it. Callers hold s.mu.
func (s *Server) indexService(c *ctr, present bool) {
	key, ok := serviceKey(c.config.Labels)
	switch {
	case !ok:
	case present && s.services[key] == nil:
		s.services[key] = map[*ctr]bool{c: true}
	case present:
		s.services[key][c] = true
	default:
		delete(s.services[key], c)
		if len(s.services[key]) == 0 {
			delete(s.services, key)
		}
	}
}

// Stats returns what the daemon counted, and its containers now.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	states := map[string]int{}
	for _, c := range s.containers {
		states[string(c.state)]++
	}
	s.mu.Unlock()
	c := &s.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	byAgent := make(map[string]map[string]int64, len(c.byAgent))
	for agent, reqs := range c.byAgent {
		byAgent[agent] = maps.Clone(reqs)
	}
	return Stats{
		DaemonID: s.daemonID, Requests: maps.Clone(c.requests), ByAgent: byAgent,
		Creates: c.creates, NameConflicts: c.nameConflicts, Duplicates: c.duplicates,
		DuplicateList: append([]Duplicate(nil), c.dups...), Execs: c.execs, Downs: c.downs, Containers: states,
	}
}

func (s *Server) statsHandler(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}
