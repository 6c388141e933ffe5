package fakedocker

import (
	"net/http"

	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// Live is how many live (created or running) service containers one
// namespace's Sandboxes have on the daemons, and how many Sandboxes they serve:
// what a quota benchmark samples to learn the most a namespace held at once,
// whatever the API server says of it.
type Live struct {
	Containers, Sandboxes int
}

// liveUIDs adds the Sandbox UIDs of ns's live service containers to uids, and
// returns how many containers it saw.
func (s *Server) liveUIDs(ns string, uids map[string]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.containers {
		uid := c.config.Labels[host.LabelUID]
		if uid == "" || c.config.Labels[host.LabelNamespace] != ns || !live(c) {
			continue
		}
		n++
		uids[uid] = true
	}
	return n
}

// Live sums the daemons' live service containers of namespace ns.
func (h Hosts) Live(ns string) Live {
	uids := map[string]bool{}
	var out Live
	for _, s := range h {
		out.Containers += s.liveUIDs(ns, uids)
	}
	out.Sandboxes = len(uids)
	return out
}

func (h Hosts) liveHandler(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		fail(w, http.StatusBadRequest, "namespace is required")
		return
	}
	writeJSON(w, http.StatusOK, h.Live(ns))
}
