package fakedocker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/moby/moby/api/types/common"
	"github.com/moby/moby/api/types/system"
)

// routes are the endpoints the driver calls, and the fake's own statistics.
// Every request is counted by its pattern.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, r := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"GET /_ping", s.ping}, // and HEAD
		{"GET /version", s.version},
		{"GET /info", s.info},
		{"GET /images/json", s.imageList},
		{"GET /images/{ref...}", s.imageInspect},
		{"POST /images/create", s.imageCreate},
		{"POST /containers/create", s.containerCreate},
		{"GET /containers/json", s.containerList},
		{"GET /containers/{id}/json", s.containerInspect},
		{"POST /containers/{id}/start", s.containerStart},
		{"POST /containers/{id}/stop", s.containerStop},
		{"POST /containers/{id}/kill", s.containerKill},
		{"POST /containers/{id}/rename", s.containerRename},
		{"DELETE /containers/{id}", s.containerRemove},
		{"GET /containers/{id}/logs", s.containerLogs},
		{"PUT /containers/{id}/archive", s.containerArchive},
		{"POST /containers/{id}/exec", s.execCreate},
		{"POST /exec/{id}/start", s.execStart},
		{"GET /exec/{id}/json", s.execInspect},
		{"GET /events", s.eventStream},
		{"GET /_fake/stats", s.statsHandler},
		{"GET /_fake/observed", s.observedHandler},
		{"/", s.unknown},
	} {
		mux.HandleFunc(r.pattern, func(w http.ResponseWriter, req *http.Request) {
			s.stats.request(r.pattern, req.UserAgent())
			if d := s.delayOf(r.pattern); d > 0 {
				time.Sleep(d)
			}
			r.h(w, req)
		})
	}
	return mux
}

func (s *Server) unknown(w http.ResponseWriter, r *http.Request) {
	fail(w, http.StatusNotFound, "page not found: the fake does not serve %s %s", r.Method, r.URL.Path)
}

func (s *Server) ping(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Api-Version", APIVersion)
	h.Set("Ostype", "linux")
	h.Set("Docker-Experimental", "false")
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("OK"))
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, system.VersionResponse{
		Version: "20.10.24-fakedocker", APIVersion: APIVersion, MinAPIVersion: "1.12",
		Os: "linux", Arch: "amd64", GoVersion: "go", KernelVersion: "fake",
	})
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	info := system.Info{ID: s.daemonID, Name: s.hostName, NCPU: s.cpus, OSType: "linux", Architecture: "x86_64",
		ServerVersion: "20.10.24-fakedocker", Containers: len(s.containers), Images: len(s.images)}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers as the daemon answers an error: a status and a JSON message,
// which the client classifies by the status (404 not found, 409 conflict, 400
// invalid) and prints after "Error response from daemon: ".
func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, common.ErrorResponse{Message: fmt.Sprintf(format, args...)})
}

// decodeBody decodes a JSON request body; false (answered) when it is not one.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "invalid JSON body: %v", err)
		return false
	}
	return true
}

// filters is a request's filters query: term → values.
type filters map[string]map[string]bool

// parseFilters reads the filters query, refusing terms outside allowed.
func parseFilters(r *http.Request, allowed ...string) (filters, error) {
	f := filters{}
	if raw := r.URL.Query().Get("filters"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			return nil, fmt.Errorf("invalid filters %q: %w", raw, err)
		}
	}
	for term := range f {
		if !strings.Contains(" "+strings.Join(allowed, " ")+" ", " "+term+" ") {
			return nil, fmt.Errorf("invalid filter '%s': the fake knows %s", term, strings.Join(allowed, ", "))
		}
	}
	return f, nil
}

// labelsMatch: every "key" or "key=value" of the label filter holds in labels.
func (f filters) labelsMatch(labels map[string]string) bool {
	for kv := range f["label"] {
		k, v, hasValue := strings.Cut(kv, "=")
		got, ok := labels[k]
		if !ok || hasValue && got != v {
			return false
		}
	}
	return true
}

// anyOf: the term is absent, or one of its values is among values.
func (f filters) anyOf(term string, values ...string) bool {
	if len(f[term]) == 0 {
		return true
	}
	for _, v := range values {
		if f[term][v] {
			return true
		}
	}
	return false
}

// SetDelay makes every request to the endpoint pattern (e.g. "POST
// /containers/{id}/start") wait d before it is served, after it is counted: a
// client is then known to be waiting in that call. Zero clears it.
func (s *Server) SetDelay(pattern string, d time.Duration) {
	s.delays.Lock()
	defer s.delays.Unlock()
	if s.delays.m == nil {
		s.delays.m = map[string]time.Duration{}
	}
	s.delays.m[pattern] = d
}

func (s *Server) delayOf(pattern string) time.Duration {
	s.delays.Lock()
	defer s.delays.Unlock()
	return s.delays.m[pattern]
}
