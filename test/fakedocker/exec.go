package fakedocker

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// ExecCall is an exec for an ExecHook to answer: the container it runs in and
// the command with its environment.
type ExecCall struct {
	// Labels, Env and Addresses are the container's (Addresses: its IPs on
	// every network it joined).
	Labels    map[string]string
	Env       []string
	Addresses []string
	// Files are those copied into the container (do not modify).
	Files map[string][]byte
	Cmd   []string
	// ExecEnv is the exec's own environment, KEY=value, a held exec's late
	// variables included.
	ExecEnv []string
}

// ExecResult is how an exec ends: at once, with this output.
type ExecResult struct {
	ExitCode       int
	Stdout, Stderr string
	// Files are written into the container as the exec ends (a rotation
	// rewriting its secrets).
	Files map[string][]byte
}

// ExecHook answers an exec (ok) or leaves it to the fake: a fake.Script command
// runs its script, any other exits 0 at once with no output. It is called with
// the Server's lock held: it must not call the Server.
type ExecHook func(ExecCall) (res ExecResult, ok bool)

// execProc is one exec and its process. Guarded by Server.mu.
type execProc struct {
	id      string
	c       *ctr
	cmd     []string // the held exec's own once it runs
	env     []string
	stdin   bool
	started bool
	running bool
	exit    *int
}

func (s *Server) execCreate(w http.ResponseWriter, r *http.Request) {
	var req container.ExecCreateRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.Cmd) == 0 {
		fail(w, http.StatusBadRequest, "No exec command specified")
		return
	}
	s.withContainer(w, r, func(c *ctr) {
		if c.state != container.StateRunning {
			fail(w, http.StatusConflict, "Container %s is not running", c.id)
			return
		}
		p := &execProc{id: randomID(), c: c, cmd: slices.Clone(req.Cmd), env: slices.Clone(req.Env), stdin: req.AttachStdin}
		s.execs[p.id] = p
		s.stats.add(&s.stats.execs)
		writeJSON(w, http.StatusCreated, container.ExecCreateResponse{ID: p.id})
	})
}

func (s *Server) execInspect(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p, ok := s.execs[r.PathValue("id")]
	var res container.ExecInspectResponse
	if ok {
		res = container.ExecInspectResponse{ID: p.id, Running: p.running, ExitCode: p.exit, ContainerID: p.c.id,
			OpenStdin: p.stdin, OpenStdout: true, OpenStderr: true}
		if p.running {
			res.Pid = 4242
		}
	}
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusNotFound, "No such exec instance: %s", r.PathValue("id"))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// behaviour is what cmd does in c: the hook's answer, else a script's (with
// how long it runs first), else nothing at once.
func (s *Server) behaviour(c *ctr, cmd, env []string) (ExecResult, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook != nil {
		call := ExecCall{Labels: c.config.Labels, Env: c.config.Env, Files: c.files, Cmd: cmd, ExecEnv: env}
		for _, ip := range c.ips {
			call.Addresses = append(call.Addresses, ip.String())
		}
		if res, ok := s.hook(call); ok {
			return res, 0
		}
	}
	if sc, ok := fake.ParseScript(cmd); ok {
		stdout, stderr := sc.Output(append(slices.Clone(c.config.Env), env...), c.files)
		return ExecResult{ExitCode: sc.Exit, Stdout: stdout, Stderr: stderr}, sc.Sleep
	}
	return ExecResult{}, 0
}

// finish records p's end and what it wrote into its container, and emits
// its exec_die as Docker does (while its container is still known).
func (s *Server) finish(p *execProc, code int, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.running, p.exit = false, &code
	if s.containers[p.c.id] != p.c {
		return
	}
	if len(files) > 0 {
		p.c.write(maps.Clone(files))
	}
	s.emit(p.c, "exec_die", map[string]string{"execID": p.id, "exitCode": strconv.Itoa(code)})
}

// ExecsRunning counts the execs of exactly cmd still running in the container.
func (s *Server) ExecsRunning(nameOrID string, cmd []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, n := s.resolve(nameOrID), 0
	for _, p := range s.execs {
		if p.c == c && p.running && slices.Equal(p.cmd, cmd) {
			n++
		}
	}
	return n
}

// forgetExecs drops c's execs, as Docker does when it removes c. Callers hold s.mu.
func (s *Server) forgetExecs(c *ctr) {
	for id, p := range s.execs {
		if p.c == c {
			delete(s.execs, id)
		}
	}
}
