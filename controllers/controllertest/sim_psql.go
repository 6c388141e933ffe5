package controllertest

// The simulated postgres's psql: the probe, extensions, and a postmaster slow
// to accept connections.

import (
	"slices"
	"strconv"
	"strings"
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

// psql answers the probe, CREATE EXTENSION and the extension list for c.
func (s *EngineSim) psql(c dd.Container, password string, spec dd.ExecSpec) dd.ExecResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leak {
		return dd.ExecResult{ExitCode: 2, Stderr: "FATAL: odd tool quoting its password " + spec.Env["PGPASSWORD"]}
	}
	if res, ok := s.gaveUp(c, spec); ok {
		return res
	}
	if spec.Env["PGPASSWORD"] != password || password == "" {
		return denied
	}
	sql := spec.Cmd[len(spec.Cmd)-1]
	switch {
	case sql == "SELECT 1":
		return dd.ExecResult{Stdout: "1\n"}
	case strings.HasPrefix(sql, "CREATE EXTENSION"):
		for _, stmt := range strings.Split(sql, ";") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(stmt), `CREATE EXTENSION IF NOT EXISTS "`); ok {
				name = strings.TrimSuffix(name, `"`)
				if !s.broken[name] && !slices.Contains(s.created[c.ID], name) {
					s.created[c.ID] = append(s.created[c.ID], name)
				}
			}
		}
		return dd.ExecResult{}
	case sql == "SELECT extname FROM pg_extension":
		return dd.ExecResult{Stdout: strings.Join(append([]string{"plpgsql"}, s.created[c.ID]...), "\n") + "\n"}
	}
	return dd.ExecResult{}
}
