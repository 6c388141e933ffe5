package controllertest

import (
	"strings"
	"sync"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// simData is what each container holds, as the engines' data steps see it:
// its current data, its checkpoint and its initial snapshot (a word each), and
// how often each operation ran (by container ID).
type simData struct {
	mu                  sync.Mutex
	current, checkpoint map[string]string
	initial             map[string]string
	ops                 map[string]map[string]int
	fail                map[string]string
}

func (d *simData) init() {
	if d.current == nil {
		d.current, d.checkpoint, d.initial = map[string]string{}, map[string]string{}, map[string]string{}
		d.ops, d.fail = map[string]map[string]int{}, map[string]string{}
	}
}

// Write sets what container id holds, as an agent's writes would.
func (s *EngineSim) Write(id, data string) {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	s.data.current[id] = data
}

// Holds is what container id holds ("" until written: empty or as seeded).
func (s *EngineSim) Holds(id string) string {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	return s.data.current[id]
}

// OpsRun is how often op ran to its end in container id.
func (s *EngineSim) OpsRun(id string, op engine.DataOp) int {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	return s.data.ops[id][string(op)]
}

// FailData makes op fail with the engine's words msg ("" clears it).
func (s *EngineSim) FailData(op engine.DataOp, msg string) {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	s.data.fail[string(op)] = msg
}

// dataOp answers a data step: it checks the password the step presents
// against the container's, then does the operation on the container's words.
func (s *EngineSim) dataOp(c dd.Container, env map[string]string, spec dd.ExecSpec) dd.ExecResult {
	want := s.redisPassword(c)
	got := spec.Env["REDISCLI_AUTH"]
	if f := env["POSTGRES_PASSWORD_FILE"]; f != "" {
		want, got = s.secret(c, f), spec.Env["PGPASSWORD"]
	}
	if f := env["MONGO_INITDB_ROOT_PASSWORD_FILE"]; f != "" {
		want = s.secret(c, f)
		if strings.Contains(spec.Env["SANDBOX_DATA_URI"], ":"+want+"@") {
			got = want
		}
	}
	if want == "" || got != want {
		return denied
	}
	op := spec.Env["SANDBOX_DATA_OP"]
	mongo := env["MONGO_INITDB_ROOT_PASSWORD_FILE"] != ""
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	if msg := s.data.fail[op]; msg != "" {
		return dd.ExecResult{ExitCode: 1, Stderr: msg}
	}
	switch engine.DataOp(op) {
	case engine.OpCheckpoint, engine.OpRestore:
		if mongo {
			return dd.ExecResult{ExitCode: 1, Stderr: "the sim's mongo has no snapshots"}
		}
	}
	switch engine.DataOp(op) {
	case engine.OpInitial:
		if _, ok := s.data.initial[c.ID]; !ok {
			s.data.initial[c.ID] = s.data.current[c.ID]
		}
	case engine.OpCheckpoint:
		s.data.checkpoint[c.ID] = s.data.current[c.ID]
	case engine.OpRestore:
		ckpt, ok := s.data.checkpoint[c.ID]
		if !ok {
			return dd.ExecResult{ExitCode: 1, Stderr: "no checkpoint in this container: take one first"}
		}
		s.data.current[c.ID] = ckpt
	case engine.OpReset:
		s.data.current[c.ID] = s.data.initial[c.ID]
	}
	if s.data.ops[c.ID] == nil {
		s.data.ops[c.ID] = map[string]int{}
	}
	s.data.ops[c.ID][op]++
	return dd.ExecResult{Stdout: engine.DataDone + "\n"}
}
