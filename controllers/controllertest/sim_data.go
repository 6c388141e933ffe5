package controllertest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// simData is what each container holds, as the engines' data steps see it:
// its current data, its checkpoints (by "<container>/<name>") and its initial
// snapshot (a word each), and how often each operation ran (by container ID).
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
	if mongo && op != string(engine.OpReset) && op != string(engine.OpInitial) {
		return dd.ExecResult{ExitCode: 1, Stderr: "the sim's mongo has no snapshots"}
	}
	if res, failed := s.data.do(c.ID, engine.DataOp(op), spec.Env); failed {
		return res
	}
	if s.data.ops[c.ID] == nil {
		s.data.ops[c.ID] = map[string]int{}
	}
	s.data.ops[c.ID][op]++
	out := ""
	if engine.DataOp(op).Lists() {
		out = s.data.list(c.ID)
	}
	return dd.ExecResult{Stdout: out + engine.DataDone + "\n"}
}

// do does op in container id; failed says it did not, res saying why.
func (d *simData) do(id string, op engine.DataOp, env map[string]string) (res dd.ExecResult, failed bool) {
	name := cmp.Or(env["SANDBOX_DATA_NAME"], "latest")
	key := id + "/" + name
	_, held := d.checkpoint[key]
	switch op {
	case engine.OpInitial:
		if _, ok := d.initial[id]; !ok {
			d.initial[id] = d.current[id]
		}
	case engine.OpCheckpoint:
		if limit, _ := strconv.Atoi(cmp.Or(env["SANDBOX_DATA_MAX"], "32")); !held && len(d.names(id)) >= limit {
			return dd.ExecResult{ExitCode: 3, Stderr: fmt.Sprintf("checkpoint %s: the service keeps at most %d checkpoints", name, limit)}, true
		}
		d.checkpoint[key] = d.current[id]
	case engine.OpRestore, engine.OpDelete:
		if !held {
			return dd.ExecResult{ExitCode: 1, Stderr: "no checkpoint named " + name + " in this container: take one first"}, true
		}
		if op == engine.OpDelete {
			delete(d.checkpoint, key)
		} else {
			d.current[id] = d.checkpoint[key]
		}
	case engine.OpReset:
		d.current[id] = d.initial[id]
	}
	return dd.ExecResult{}, false
}

// names are the checkpoints container id holds, sorted.
func (d *simData) names(id string) []string {
	var out []string
	for k := range d.checkpoint {
		if c, name, _ := strings.Cut(k, "/"); c == id {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// list is the listing a data step prints (engine.CheckpointsHeader).
func (d *simData) list(id string) string {
	var b strings.Builder
	b.WriteString(engine.CheckpointsHeader + "\n")
	for _, n := range d.names(id) {
		fmt.Fprintf(&b, "checkpoint %s %d %d\n", n, time.Now().Unix(), len(d.checkpoint[id+"/"+n])+1)
	}
	return b.String()
}

// DropCheckpoint removes checkpoint name from container id, as an agent
// dropping its database would.
func (s *EngineSim) DropCheckpoint(id, name string) {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.init()
	delete(s.data.checkpoint, id+"/"+name)
}
