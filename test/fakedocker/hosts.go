package fakedocker

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
)

// Hosts are fake daemons run together, each on a socket of its own.
type Hosts []*Server

// StartHosts starts n daemons in dir (host-000.sock, ...), each with its own
// daemon ID and name (fakehost-000, ...) and opts.
func StartHosts(dir string, n int, opts ...Option) (Hosts, error) {
	hosts := make(Hosts, 0, n)
	for i := range n {
		name := fmt.Sprintf("fakehost-%03d", i)
		s := New(append([]Option{WithDaemon(randomID()[:48], name)}, opts...)...)
		if err := s.Listen("unix", filepath.Join(dir, fmt.Sprintf("host-%03d.sock", i))); err != nil {
			hosts.Close()
			return nil, err
		}
		hosts = append(hosts, s)
	}
	return hosts, nil
}

// Close stops every daemon.
func (h Hosts) Close() {
	for _, s := range h {
		s.Close()
	}
}

// HostStats is one daemon's statistics, with its name and address.
type HostStats struct {
	Name, Host string
	Stats
}

// Summary is every daemon's statistics and their sums.
type Summary struct {
	Creates, NameConflicts, Duplicates, Execs, Downs int64
	Requests                                         map[string]int64
	Containers                                       map[string]int
	Hosts                                            []HostStats `json:",omitempty"`
}

// Summary sums the daemons' statistics.
func (h Hosts) Summary() Summary {
	sum := Summary{Requests: map[string]int64{}, Containers: map[string]int{}}
	for _, s := range h {
		st := s.Stats()
		sum.Hosts = append(sum.Hosts, HostStats{Name: s.hostName, Host: s.Host(), Stats: st})
		sum.Creates += st.Creates
		sum.NameConflicts += st.NameConflicts
		sum.Duplicates += st.Duplicates
		sum.Execs += st.Execs
		sum.Downs += st.Downs
		for k, v := range st.Requests {
			sum.Requests[k] += v
		}
		for k, v := range st.Containers {
			sum.Containers[k] += v
		}
	}
	return sum
}

// Control is what a benchmark drives the daemons with, over HTTP:
// GET /stats (the Summary), GET /observed?since=<RFC 3339> (Observed), GET
// /live?namespace=<ns> (Live), and POST /hosts/{i}/down, /up, /restart, /stall
// and /resume for the daemon numbered i.
func (h Hosts) Control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, h.Summary()) })
	mux.HandleFunc("GET /observed", func(w http.ResponseWriter, r *http.Request) {
		if since, ok := sinceParam(w, r); ok {
			writeJSON(w, http.StatusOK, h.Observed(since))
		}
	})
	mux.HandleFunc("GET /live", h.liveHandler)
	var mu sync.Mutex
	resumes := make([]func(), len(h))
	mux.HandleFunc("POST /hosts/{i}/{action}", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.PathValue("i"))
		if err != nil || i < 0 || i >= len(h) {
			fail(w, http.StatusNotFound, "no host %q: there are %d", r.PathValue("i"), len(h))
			return
		}
		s := h[i]
		switch r.PathValue("action") {
		case "down":
			s.Down()
		case "up":
			err = s.Up()
		case "restart":
			err = s.Restart()
		case "stall":
			mu.Lock()
			resumes[i] = s.Stall()
			mu.Unlock()
		case "resume":
			mu.Lock()
			if resumes[i] != nil {
				resumes[i]()
			}
			mu.Unlock()
		default:
			fail(w, http.StatusNotFound, "no action %q: down, up, restart, stall or resume", r.PathValue("action"))
			return
		}
		if err != nil {
			fail(w, http.StatusInternalServerError, "%v", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
