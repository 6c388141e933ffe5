package drivertest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// proxy forwards a unix socket to the daemon, and can cut every connection
// and stop listening, as a daemon restart looks to a client.
type proxy struct {
	path, network, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	// stalled: connections are accepted and held, never answered, as a wedged
	// daemon does; held are those connections.
	stalled bool
	held    []net.Conn
}

func startProxy(t *testing.T, network, addr string) *proxy {
	dir, err := os.MkdirTemp("", "sdt") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{path: filepath.Join(dir, "docker.sock"), network: network, addr: addr, conns: map[net.Conn]bool{}}
	if err := p.listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cut()
		_ = os.RemoveAll(dir)
	})
	return p
}

func (p *proxy) listen() error {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return nil
}

func (p *proxy) pipe(c net.Conn) {
	p.mu.Lock()
	if p.stalled {
		p.held = append(p.held, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	u, err := net.Dial(p.network, p.addr)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// track registers a connection pair, unless the proxy was cut meanwhile.
func (p *proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = c.Close()
		_ = u.Close()
		return false
	}
	p.conns[c], p.conns[u] = true, true
	return true
}

// cut stops listening (removing the socket) and breaks every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// stall breaks every connection and from then on accepts new ones without ever
// answering them; resume closes those and forwards again.
func (p *proxy) stall() (resume func()) {
	p.mu.Lock()
	p.stalled = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stalled = false
		for _, c := range p.held {
			_ = c.Close()
		}
		p.held = nil
	})
}
