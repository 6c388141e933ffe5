package controllertest

import (
	"strconv"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// SlowAccept makes the postgres in the container named name take d to accept
// a connection (a host so loaded that the postmaster's fork and the login
// take seconds): a psql whose PGCONNECT_TIMEOUT is shorter gives up with
// libpq's "timeout expired". clear undoes it.
func (s *EngineSim) SlowAccept(name string, d time.Duration) (clear func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accept == nil {
		s.accept = map[string]time.Duration{}
	}
	s.accept[name] = d
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.accept, name)
	}
}

// gaveUp is what a psql of spec in c answers when it gives up connecting
// before c's postgres accepts (ok: it does not). Callers hold s.mu.
func (s *EngineSim) gaveUp(c dd.Container, spec dd.ExecSpec) (dd.ExecResult, bool) {
	d := s.accept[c.Name]
	secs, err := strconv.Atoi(spec.Env["PGCONNECT_TIMEOUT"])
	if d == 0 || err != nil || secs <= 0 || time.Duration(secs)*time.Second >= d {
		return dd.ExecResult{}, false // libpq waits forever without a timeout
	}
	return dd.ExecResult{ExitCode: 2, Stderr: "psql: error: connection to server failed: timeout expired\n"}, true
}
