package fakedocker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"

	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// execStart starts an exec and, unless detached, streams its output over the
// connection it takes over (stdin comes the other way), as Docker does.
func (s *Server) execStart(w http.ResponseWriter, r *http.Request) {
	var req container.ExecStartRequest
	if !decodeBody(w, r, &req) {
		return
	}
	s.mu.Lock()
	p, ok := s.execs[r.PathValue("id")]
	var done chan struct{}
	status, msg := http.StatusOK, ""
	switch {
	case !ok:
		status, msg = http.StatusNotFound, "No such exec instance: "+r.PathValue("id")
	case p.started:
		status, msg = http.StatusConflict, "Exec "+p.id+" has already been started"
	case p.c.state != container.StateRunning:
		status, msg = http.StatusConflict, "Container "+p.c.id+" is not running"
	default:
		p.started, p.running, done = true, true, p.c.done
	}
	s.mu.Unlock()
	if status != http.StatusOK {
		fail(w, status, "%s", msg)
		return
	}
	if req.Detach {
		go s.run(p, done, nil, nil)
		w.WriteHeader(http.StatusOK)
		return
	}
	conn, stdin, err := s.hijack(w)
	if err != nil {
		s.finish(p, 126, nil)
		return
	}
	defer s.serving.untrack(conn)
	s.run(p, done, conn, stdin)
}

// hijack takes the connection over, with Docker's upgrade answer.
func (s *Server) hijack(w http.ResponseWriter) (net.Conn, *bufio.Reader, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, errNotServing
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if !s.serving.track(conn) {
		_ = conn.Close()
		return nil, nil, errNotServing
	}
	_, _ = rw.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\n" +
		"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	if err := rw.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return conn, rw.Reader, nil
}

// run is p's process: a held one first waits for its environment on stdin;
// then it writes its output and runs on until its time is up or its container
// (done) stops, whether or not its caller still listens. conn (nil when
// detached) is closed at its end.
func (s *Server) run(p *execProc, done <-chan struct{}, conn net.Conn, stdin *bufio.Reader) {
	s.mu.Lock()
	cmd, env := p.cmd, p.env
	s.mu.Unlock()
	if conn != nil {
		defer func() { _ = conn.Close() }()
	}
	if p.stdin && stdin != nil { // held: by the hold script, or by itself
		extra, ok := waitHeld(conn, stdin, done)
		if !ok {
			s.finish(p, 125, nil) // the hold script's exit: its command never ran
			return
		}
		if isHeld(cmd, p.stdin) {
			cmd = cmd[4:]
		}
		env = append(env, extra...)
		s.mu.Lock()
		p.cmd = cmd
		s.mu.Unlock()
	}
	cmd, killAt := fake.KilledAt(cmd)
	if killAt > 0 {
		s.mu.Lock()
		p.cmd = cmd
		s.mu.Unlock()
	}
	res, runFor := s.behaviour(p.c, cmd, env)
	if killAt > 0 && (runFor == fake.Forever || runFor > killAt) {
		runFor, res.ExitCode = killAt, 137 // timeout(1)'s KILL
	}
	if conn != nil {
		_, _ = conn.Write(frame(stdcopy.Stdout, []byte(res.Stdout)))
		_, _ = conn.Write(frame(stdcopy.Stderr, []byte(res.Stderr)))
	}
	code := res.ExitCode
	if runFor != 0 {
		var timeUp <-chan time.Time
		if runFor != fake.Forever {
			timeUp = time.After(runFor)
		}
		select {
		case <-timeUp:
		case <-done:
			code = 137
		}
	}
	s.finish(p, code, res.Files)
}

// isHeld: the driver's PrepareExec holds a command in `sh -c <hold script> sh
// CMD...` until its environment comes on stdin.
func isHeld(cmd []string, stdin bool) bool {
	return stdin && len(cmd) > 4 && cmd[0] == "sh" && cmd[1] == "-c" && cmd[3] == "sh" &&
		strings.Contains(cmd[2], "_held_") && strings.Contains(cmd[2], `exec "$@"`)
}

// waitHeld reads a held exec's environment from stdin; false when stdin ends
// first (the exec was closed) or the container stops (which breaks the
// connection, as the shell dies with it).
func waitHeld(conn net.Conn, stdin *bufio.Reader, done <-chan struct{}) ([]string, bool) {
	got := make(chan []string, 1)
	go func() { got <- readHeld(stdin) }()
	select {
	case env := <-got:
		return env, env != nil
	case <-done:
		_ = conn.Close()
		return nil, false
	}
}

// readHeld reads `export NAME='value'` lines up to "." (nil: stdin ended or
// held something else).
func readHeld(r io.Reader) []string {
	env := []string{}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "." {
			return env
		}
		name, quoted, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		value, vok := unquoteHeld(quoted)
		if !ok || !vok {
			return nil
		}
		env = append(env, name+"="+value)
	}
}

// unquoteHeld reads a value as the driver writes it for the hold script:
// single-quoted runs, \' for a quote, "$_held_nl" for a newline.
func unquoteHeld(s string) (string, bool) {
	const nl = `"$_held_nl"`
	var b strings.Builder
	for s != "" {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		case strings.HasPrefix(s, nl):
			b.WriteByte('\n')
			s = s[len(nl):]
		default:
			return "", false
		}
	}
	return b.String(), true
}
