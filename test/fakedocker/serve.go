package fakedocker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"regexp"
	"sync"
	"time"
)

// listener is how a Server is reached: its address, the HTTP server while it is
// up, and the connections it handed over to exec streams.
type listener struct {
	mu            sync.Mutex
	network, addr string
	srv           *http.Server
	hijacked      map[net.Conn]bool
	stall         chan struct{} // non-nil while stalled; closed on resume
}

// Listen serves on network ("unix" or "tcp") at addr, e.g. a socket path or
// "127.0.0.1:0", until Down or Close.
func (s *Server) Listen(network, addr string) error {
	s.serving.mu.Lock()
	s.serving.network, s.serving.addr = network, addr
	s.serving.mu.Unlock()
	return s.Up()
}

// Host is the address a client dials, e.g. "unix:///tmp/x/docker.sock", for
// dockerdriver.WithHost or DOCKER_HOST.
func (s *Server) Host() string {
	s.serving.mu.Lock()
	defer s.serving.mu.Unlock()
	return s.serving.network + "://" + s.serving.addr
}

// Up serves again after Down, with the state it had: a daemon back from a restart.
func (s *Server) Up() error {
	l := &s.serving
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil {
		return nil
	}
	if l.network == "unix" {
		_ = os.Remove(l.addr) // a socket left by a process that died
	}
	ln, err := net.Listen(l.network, l.addr)
	if err != nil {
		return err
	}
	l.addr = ln.Addr().String() // a TCP port asked as 0 stays the same across restarts
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	l.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: time.Minute}
	l.hijacked = map[net.Conn]bool{}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(l.srv)
	return nil
}

// Down stops serving as a daemon that went away does: the socket is gone and
// every connection breaks (event streams, execs). The state stays for Up; the
// execs' processes run on.
func (s *Server) Down() {
	l := &s.serving
	l.mu.Lock()
	srv, conns := l.srv, l.hijacked
	l.srv, l.hijacked = nil, nil
	l.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	for c := range conns {
		_ = c.Close()
	}
	s.stats.add(&s.stats.downs)
}

// Restart is Down, then Up at the same address.
func (s *Server) Restart() error {
	s.Down()
	return s.Up()
}

// Close stops serving for good, and stops every container, which ends the
// execs still running in them.
func (s *Server) Close() {
	s.Down()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.containers {
		s.exit(c, c.stopCode())
	}
}

// Stall makes the daemon accept requests and never answer them, as a wedged
// daemon does, until resume (which may be called more than once).
func (s *Server) Stall() (resume func()) {
	l := &s.serving
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stall == nil {
		l.stall = make(chan struct{})
	}
	ch := l.stall
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.stall == ch {
			l.stall = nil
		}
		close(ch)
	})
}

// stalled holds a request while the daemon is stalled; it reports whether the
// request was given up on.
func (l *listener) stalled(ctx context.Context) bool {
	l.mu.Lock()
	ch := l.stall
	l.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	case <-ctx.Done():
		return true
	}
}

// track hands a hijacked connection to Down; false when the daemon is down already.
func (l *listener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hijacked == nil {
		return false
	}
	l.hijacked[c] = true
	return true
}

func (l *listener) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.hijacked, c)
}

var versionPrefix = regexp.MustCompile(`^/v[0-9][0-9.]*/`)

// handler strips the API version from the path, holds requests while stalled,
// and routes them.
func (s *Server) handler() http.Handler {
	mux := s.routes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = versionPrefix.ReplaceAllString(r.URL.Path, "/")
		if s.serving.stalled(r.Context()) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// errNotServing is what a hijack finds when the daemon went down meanwhile.
var errNotServing = errors.New("fakedocker: not serving")
