package chaos

import (
	"context"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"regexp"
	"strings"
	"sync"
	"time"
)

// proxy sits between the manager and the suite's dockerd (the manager's
// --docker-host is its socket). It counts the requests that reach it, per
// endpoint and container creates per name, and can stall them or drop every
// connection on demand: a Docker API that hangs or breaks.
type proxy struct {
	socket string
	srv    *http.Server

	mu       sync.Mutex
	calls    map[string]int // "METHOD /path" (IDs and API version left out)
	work     int            // every request but the driver's upkeep, since the start
	creates  map[string]int // container creates by name
	stallEnd time.Time
	dropEnd  time.Time
	conns    map[net.Conn]bool
}

var (
	apiVersion = regexp.MustCompile(`^/v[0-9.]+`)
	idSegment  = regexp.MustCompile(`^/(containers|exec|volumes|networks)/[^/]+`)
)

// startProxy serves on socket, forwarding to the daemon at upstream (a unix path).
func startProxy(socket, upstream string) (*proxy, error) {
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	p := &proxy{socket: socket, calls: map[string]int{}, creates: map[string]int{}, conns: map[net.Conn]bool{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", upstream)
		}},
		FlushInterval: -1,
		// Note: a request cut short by a fault is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(w, r, rp) }),
		ConnState: func(c net.Conn, s http.ConnState) {
			p.mu.Lock()
			defer p.mu.Unlock()
			switch s {
			case http.StateNew:
				p.conns[c] = true
			case http.StateClosed, http.StateHijacked:
				delete(p.conns, c)
			}
		},
	}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) {
	p.count(r)
	for {
		p.mu.Lock()
		stall, drop := time.Until(p.stallEnd), time.Now().Before(p.dropEnd)
		p.mu.Unlock()
		if drop {
			p.hangUp(w)
			return
		}
		if stall <= 0 {
			break
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(min(stall, 200*time.Millisecond)):
		}
	}
	rp.ServeHTTP(w, r)
}

// hangUp closes the connection without an answer.
func (p *proxy) hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (p *proxy) count(r *http.Request) {
	path := apiVersion.ReplaceAllString(r.URL.Path, "")
	if !strings.HasPrefix(path, "/containers/json") && !strings.HasPrefix(path, "/containers/create") {
		path = idSegment.ReplaceAllString(path, "/$1/{id}")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := r.Method + " " + path
	if path == "/images/create" && r.URL.Query().Get("fromImage") != "" {
		key += " (pull)"
	}
	p.calls[key]++
	if !upkeep(key) {
		p.work++
	}
	if path == "/containers/create" {
		p.creates[r.URL.Query().Get("name")]++
	}
}

// stall holds every request that arrives within d until d has passed.
func (p *proxy) stall(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stallEnd = time.Now().Add(d)
}

// drop closes every open connection (the event stream with them) and hangs up
// on every request for d.
func (p *proxy) drop(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropEnd = time.Now().Add(d)
	for c := range p.conns {
		_ = c.Close()
	}
}

// take returns the counts since the last take and starts afresh.
func (p *proxy) take() (calls, creates map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	calls, creates = maps.Clone(p.calls), maps.Clone(p.creates)
	clear(p.calls)
	clear(p.creates)
	return calls, creates
}

func (p *proxy) close() { _ = p.srv.Close() }

// work counts the requests that are work asked of the engine: the event stream and
// version negotiation are the driver's upkeep.
func work(calls map[string]int) int {
	n := 0
	for k, v := range calls {
		if !upkeep(k) {
			n += v
		}
	}
	return n
}

func upkeep(call string) bool {
	return strings.HasPrefix(call, "GET /events") || strings.Contains(call, "/_ping")
}

// worked is the number of requests besides upkeep since the proxy started.
func (p *proxy) worked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.work
}
