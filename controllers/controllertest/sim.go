package controllertest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// EngineSim is the fake Docker host plus engines that answer the controller's
// probes and feature steps the way the real ones do, checking the credentials a
// probe presents against the ones the container was started with. Faults and exec
// rules of the fake still apply first.
type EngineSim struct {
	*fake.Driver
	mu sync.Mutex
	// created holds the postgres extensions created per container.
	created map[string][]string
	// broken extensions are accepted by CREATE EXTENSION but never appear.
	broken map[string]bool
	// crash makes new containers of an image exit at once with this code and log.
	crash map[string]crash
	// leak makes psql answer with an error that quotes the password it was given.
	leak bool
	// accept is how long each container's postgres takes to accept a
	// connection, by container name (SlowAccept).
	accept map[string]time.Duration
	// inflight counts concurrent creates and execs; peak keeps the most seen at once.
	inflight, peak map[string]int
	// data is each container's simulated data (sim_data.go).
	data simData
	// creates are when each CreateContainer began; steps when each feature
	// step (rotate, data) began, by container ID.
	creates []time.Time
	steps   map[string][]featureStep
	// stepsState holds the detached steps (sim_steps.go).
	stepsState simSteps
}

type crash struct {
	code int
	log  string
}

// CrashOnStart makes containers of image exit right after they start; clear undoes it.
func (s *EngineSim) CrashOnStart(image string, code int, log string) (clear func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crash[image] = crash{code, log}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.crash, image)
	}
}

func (s *EngineSim) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	s.mu.Lock()
	s.creates = append(s.creates, time.Now())
	s.mu.Unlock()
	done := s.track("create")
	c, err := s.Driver.CreateContainer(ctx, spec)
	done()
	s.mu.Lock()
	cr, crashes := s.crash[spec.Image]
	s.mu.Unlock()
	if err != nil || !crashes || c.State != dd.StateRunning {
		return c, err
	}
	_ = s.AppendLogs(c.ID, cr.log)
	_ = s.ExitContainer(c.ID, cr.code, 0)
	return s.Inspect(ctx, c.ID)
}

// LeakPasswords makes psql answer with an error that quotes the password it
// was given, as an odd tool would.
func (s *EngineSim) LeakPasswords() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leak = true
}

// NewEngineSim is an engine simulator on a new fake Docker host.
func NewEngineSim(opts ...fake.Option) *EngineSim {
	return &EngineSim{Driver: fake.New(opts...), created: map[string][]string{}, broken: map[string]bool{}, crash: map[string]crash{},
		inflight: map[string]int{}, peak: map[string]int{}, steps: map[string][]featureStep{}}
}

// BreakExtension makes a postgres extension accepted but never created; clear undoes it.
func (s *EngineSim) BreakExtension(name string) (clear func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken[name] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.broken, name)
	}
}

func (s *EngineSim) Exec(ctx context.Context, id string, spec dd.ExecSpec) (dd.ExecResult, error) {
	if req, ok := step.Decode(spec.Cmd, nil); ok && req.Verb != step.VerbStart {
		return s.answerStep(ctx, id, req)
	}
	s.noteStep(id, spec)
	done := s.track("exec")
	res, err := s.Driver.Exec(ctx, id, spec)
	done()
	return s.engineAnswer(id, spec, res), err
}

// engineAnswer is what the engine in container id answers to spec, given
// what the fake's exec gave (a fault's, an exec rule's or a script's answer
// stands).
func (s *EngineSim) engineAnswer(id string, spec dd.ExecSpec, res dd.ExecResult) dd.ExecResult {
	if res.ExitCode != 0 || res.Stdout != "" {
		return res
	}
	c, ok := s.Peek(id)
	if !ok {
		return res
	}
	env := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	switch spec.Cmd[0] {
	case "sh":
		if len(spec.Cmd) > 3 && spec.Cmd[3] == "rotate" {
			return s.rotate(c, env, spec)
		}
		if len(spec.Cmd) > 3 && spec.Cmd[3] == "data" {
			return s.dataOp(c, env, spec)
		}
	case "psql":
		return s.psql(c, s.secret(c, env["POSTGRES_PASSWORD_FILE"]), spec)
	case "redis-cli":
		return redisCLI(c, s.redisPassword(c), spec)
	case "bash": // mongo: a port check, then mongosh
		pw := s.secret(c, env["MONGO_INITDB_ROOT_PASSWORD_FILE"])
		if pw == "" || !strings.Contains(spec.Env["SANDBOX_PROBE_URI"], ":"+pw+"@") {
			return denied
		}
		return dd.ExecResult{Stdout: "1\n"}
	}
	return res
}

// checked is res as engine.Step.Checked's script ends: exit 0 only with
// expect in its stdout.
func checked(res dd.ExecResult, expect string) dd.ExecResult {
	if res.ExitCode == 0 && !strings.Contains(res.Stdout, expect) {
		res.ExitCode, res.Stderr = 1, res.Stderr+"its output lacks "+expect+"\n"
	}
	return res
}

// PrepareExec holds the command as the fake does; its Run goes through Exec,
// with the environment it brings.
func (s *EngineSim) PrepareExec(ctx context.Context, id string, spec dd.ExecSpec) (dd.PreparedExec, error) {
	p, err := s.Driver.PrepareExec(ctx, id, spec)
	if err != nil {
		return nil, err
	}
	return &simPrepared{s: s, id: id, spec: spec, held: p}, nil
}

type simPrepared struct {
	s    *EngineSim
	id   string
	spec dd.ExecSpec
	held dd.PreparedExec
	ran  atomic.Bool
}

func (p *simPrepared) Run(ctx context.Context, env map[string]string) (dd.ExecResult, error) {
	held := p.held.Held()
	p.held.Close()
	if p.ran.Swap(true) {
		return dd.ExecResult{}, dd.NewError("exec", p.id, dd.ErrInvalid, errors.New("a prepared exec runs once"))
	}
	if !held {
		return dd.ExecResult{}, dd.NewError("exec", p.id, dd.ErrNotRun, errors.New("its held shell is gone"))
	}
	return p.s.Exec(ctx, p.id, p.spec.WithEnv(env))
}

// Launch runs a step's runner as the container would (sim_steps.go), any
// other command as Run does, ended at once. It hands no late result: a
// simulated step's end is read by a state exec (Observe).
func (p *simPrepared) Launch(ctx context.Context, env map[string]string, wait time.Duration, _ func(dd.ExecResult)) (dd.ExecResult, bool, error) {
	held := p.held.Held()
	p.held.Close()
	if p.ran.Swap(true) {
		return dd.ExecResult{}, false, dd.NewError("exec", p.id, dd.ErrInvalid, errors.New("a prepared exec runs once"))
	}
	if !held {
		return dd.ExecResult{}, false, dd.NewError("exec", p.id, dd.ErrNotRun, errors.New("its held shell is gone"))
	}
	if req, ok := step.Decode(p.spec.Cmd, env); ok && req.Verb == step.VerbStart {
		return p.s.launchStep(ctx, p.id, req, env, wait)
	}
	res, err := p.s.Exec(ctx, p.id, p.spec.WithEnv(env))
	return res, err == nil, err
}

func (p *simPrepared) Held() bool { return !p.ran.Load() && p.held.Held() }

func (p *simPrepared) Close() { p.held.Close() }

var denied = dd.ExecResult{ExitCode: 2, Stderr: "authentication failed"}

// secret reads a password file written into c, as the images' *_FILE variables do.
func (s *EngineSim) secret(c dd.Container, path string) string {
	content, _ := s.File(c.ID, path)
	return string(content)
}

// redisPassword is the requirepass of the configuration file c was started with.
func (s *EngineSim) redisPassword(c dd.Container) string {
	if len(c.Cmd) < 2 || !strings.HasSuffix(c.Cmd[1], ".conf") {
		return ""
	}
	first, _, _ := strings.Cut(s.secret(c, c.Cmd[1]), "\n")
	pw, _ := strings.CutPrefix(first, "requirepass ")
	return pw
}

// redisCLI answers the probe and MODULE LIST for c, checking the password.
func redisCLI(c dd.Container, password string, spec dd.ExecSpec) dd.ExecResult {
	if password == "" || spec.Env["REDISCLI_AUTH"] != password {
		return dd.ExecResult{Stdout: "NOAUTH Authentication required.\n"}
	}
	if strings.Join(spec.Cmd[len(spec.Cmd)-2:], " ") != "MODULE LIST" {
		return dd.ExecResult{Stdout: "PONG\n"}
	}
	names := map[string]string{"redisearch.so": "search", "rejson.so": "ReJSON", "redisbloom.so": "bf"}
	var out []string
	for j, arg := range c.Cmd {
		if arg == "--loadmodule" && j+1 < len(c.Cmd) {
			base := c.Cmd[j+1][strings.LastIndex(c.Cmd[j+1], "/")+1:]
			out = append(out, "name", names[base], "ver", "1")
		}
	}
	return dd.ExecResult{Stdout: strings.Join(out, "\n") + "\n"}
}

// rotate answers an engine's Rotate step: it passes when the container's
// password is the old or the new one, and writes the new secret files.
func (s *EngineSim) rotate(c dd.Container, env map[string]string, spec dd.ExecSpec) dd.ExecResult {
	current := s.redisPassword(c)
	for _, file := range []string{env["POSTGRES_PASSWORD_FILE"], env["MONGO_INITDB_ROOT_PASSWORD_FILE"]} {
		if file != "" {
			current = s.secret(c, file)
		}
	}
	if current == "" || current != spec.Env["OLD_PASSWORD"] && current != spec.Env["NEW_PASSWORD"] {
		return denied
	}
	for i, path := range spec.Cmd[6:] {
		_ = s.WriteFile(c.ID, path, []byte(spec.Env["SANDBOX_SECRET_"+strconv.Itoa(i)]))
	}
	return dd.ExecResult{Stdout: "sandbox-rotated\n"}
}
