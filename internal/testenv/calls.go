package testenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// DockerCalls is a proxy in front of the Docker engine that counts the API
// requests passing through it. It counts at the API rather than wrapping a
// dd.Driver: a wrapper misses every method added after it (and the requests one
// method makes), the engine sees them all.
type DockerCalls struct {
	// Host is the proxy's address, for dd.WithHost.
	Host    string
	mu      sync.Mutex
	counts  Calls
	tracing bool
	trace   []Request
}

// Request is one request the proxy passed, as Trace records it.
type Request struct {
	// Method, Path and Query are as sent (the path with its IDs and API version).
	Method, Path, Query string
	// At is when it reached the proxy; Took is until its answer was passed on
	// (an exec's start returns when the exec ends).
	At   time.Time
	Took time.Duration
}

// Calls counts Docker API requests by "METHOD /path", with the API version and
// container IDs left out ("GET /containers/{id}/json").
type Calls map[string]int

var (
	apiVersion  = regexp.MustCompile(`^/v[0-9.]+`)
	containerID = regexp.MustCompile(`^/containers/[^/]+(/|$)`)
)

// CountDockerCalls starts a proxy to the engine at daemonHost (unix:// or tcp://,
// as client.DaemonHost says) on a socket in t's temporary folder, until t ends.
func CountDockerCalls(t T, daemonHost string) *DockerCalls {
	t.Helper()
	network, addr, ok := strings.Cut(daemonHost, "://")
	if !ok || (network != "unix" && network != "tcp") {
		t.Fatalf("cannot proxy to the Docker host %q", daemonHost)
		return nil
	}
	path := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
		return nil
	}
	p := &DockerCalls{Host: "unix://" + path, counts: Calls{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}},
		FlushInterval: -1, // event streams and pull progress pass as they come
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r.Method, r.URL.Path)
		at := time.Now()
		var once sync.Once
		answered := func() {
			once.Do(func() {
				p.traced(Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, At: at, Took: time.Since(at)})
			})
		}
		rp.ServeHTTP(&answerWriter{ResponseWriter: w, head: r.Method == http.MethodHead, left: -1, answered: answered}, r)
		answered()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

func (p *DockerCalls) count(method, path string) {
	path = apiVersion.ReplaceAllString(path, "")
	// Note: /containers/json and /containers/create are the two paths whose second
	// segment is not an ID.
	if !strings.HasPrefix(path, "/containers/json") && !strings.HasPrefix(path, "/containers/create") {
		path = containerID.ReplaceAllString(path, "/containers/{id}$1")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[method+" "+path]++
}

// Trace records every request answered from now on, until Traced (for a
// benchmark's timeline; the event stream, never answered, is not recorded).
func (p *DockerCalls) Trace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tracing, p.trace = true, nil
}

// Traced stops recording and returns the requests answered since Trace.
func (p *DockerCalls) Traced() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tracing = false
	return p.trace
}

func (p *DockerCalls) traced(r Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracing {
		p.trace = append(p.trace, r)
	}
}

// Reset forgets what was counted so far.
func (p *DockerCalls) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.counts)
}

// Snapshot is what was counted since the start or the last Reset.
func (p *DockerCalls) Snapshot() Calls {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// background says a request is the event stream or API version negotiation: the
// driver's own upkeep, not what the controller asked of the engine.
func background(call string) bool {
	for _, prefix := range []string{"GET /events", "HEAD /_ping", "GET /_ping"} {
		if strings.HasPrefix(call, prefix) {
			return true
		}
	}
	return false
}

// Total is the number of requests, those of background upkeep left out.
func (c Calls) Total() int {
	n := 0
	for call, v := range c {
		if !background(call) {
			n += v
		}
	}
	return n
}

// Per lists each request's count divided by n (e.g. per sweep pass), sorted and
// with background upkeep left out: "DELETE /containers/{id} ×200.0, ...".
func (c Calls) Per(n float64) string {
	var parts []string
	for call, v := range c {
		if !background(call) {
			parts = append(parts, fmt.Sprintf("%s ×%.1f", call, float64(v)/n))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
