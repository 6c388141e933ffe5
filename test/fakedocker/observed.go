package fakedocker

import (
	"net/http"
	"strings"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Observed counts the Sandbox service containers (those with a UID label) and
// how many of them a client looked at on their own since a time: inspected by
// ID or name, or listed by a filter naming their Sandbox UID. A benchmark learns
// from it that a restarted manager has looked at every Sandbox's containers,
// which nothing on the API server shows (a pass that finds all well writes
// nothing). A list of every container looks at none on its own.
type Observed struct {
	Containers, Observed int
}

// observe records that a client looked at c. Callers hold s.mu.
func (c *ctr) observe() { c.observed = time.Now() }

// observeListed records the look at every container of list when the filter
// named one Sandbox UID. Callers hold s.mu.
func observeListed(f filters, list []*ctr) {
	named := false
	for kv := range f["label"] {
		k, v, ok := strings.Cut(kv, "=")
		named = named || ok && k == host.LabelUID && v != ""
	}
	if !named {
		return
	}
	for _, c := range list {
		c.observe()
	}
}

// Observed counts the service containers, and those looked at after since.
func (s *Server) Observed(since time.Time) Observed {
	s.mu.Lock()
	defer s.mu.Unlock()
	var o Observed
	for _, c := range s.containers {
		if c.config.Labels[host.LabelUID] == "" {
			continue
		}
		o.Containers++
		if c.observed.After(since) {
			o.Observed++
		}
	}
	return o
}

// sinceParam reads the query's since (RFC 3339 with nanoseconds); false (answered)
// when it is missing or malformed.
func sinceParam(w http.ResponseWriter, r *http.Request) (time.Time, bool) {
	since, err := time.Parse(time.RFC3339Nano, r.URL.Query().Get("since"))
	if err != nil {
		fail(w, http.StatusBadRequest, "since must be an RFC 3339 time: %v", err)
		return time.Time{}, false
	}
	return since, true
}

func (s *Server) observedHandler(w http.ResponseWriter, r *http.Request) {
	if since, ok := sinceParam(w, r); ok {
		writeJSON(w, http.StatusOK, s.Observed(since))
	}
}

// Observed sums the daemons' Observed.
func (h Hosts) Observed(since time.Time) Observed {
	var sum Observed
	for _, s := range h {
		o := s.Observed(since)
		sum.Containers += o.Containers
		sum.Observed += o.Observed
	}
	return sum
}
