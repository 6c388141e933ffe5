package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// buildRelease builds the manager of an earlier commit into binDir, from a
// detached git worktree of it (removed when t ends), and returns the binary and
// that release's CRD folder. t is skipped when the git history is not here.
func buildRelease(t *testing.T, commit string) (bin, crds string) {
	t.Helper()
	root := testenv.Root()
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		t.Skipf("commit %s is not in this checkout's git history (%v: %s): the release before cannot be built", commit, err, out)
	}
	parent, err := os.MkdirTemp("", "sandbox-release-")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(parent, "tree")
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", tree, commit).CombinedOutput(); err != nil {
		_ = os.RemoveAll(parent)
		t.Fatalf("git worktree add %s: %v: %s", commit, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("git", "-C", root, "worktree", "remove", "--force", tree).CombinedOutput(); err != nil {
			t.Logf("git worktree remove %s: %v: %s", tree, err, out)
		}
		_ = os.RemoveAll(parent)
	})
	bin = filepath.Join(binDir, "manager-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/manager")
	build.Dir = tree
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager of %s: %v\n%s", commit, err, out)
	}
	return bin, filepath.Join(tree, "config", "crd", "bases")
}

// writesOnly logs every write request (not reads nor watches) once answered.
const writesOnly = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`

// auditedPlane is a control plane of a benchmark's own (etcd and an API
// server, no controller manager), with the CRDs of one release, whose API
// server logs every write it answers: the writes a claim costs are counted
// where they land, not from the manager's word.
type auditedPlane struct {
	*testenv.Env
	log  string
	read int64 // how far the audit log has been read
}

// startAuditedPlane starts one; it stops when t ends (after whatever t
// started later: its manager, its namespaces' cleanups).
func startAuditedPlane(t *testing.T, crds string) *auditedPlane {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(writesOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &auditedPlane{log: filepath.Join(dir, "audit.log")}
	var err error
	if p.Env, err = testenv.StartWith(crds, map[string]string{"audit-policy-file": policy, "audit-log-path": p.log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// write is one write request the API server answered.
type write struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource, Subresource, Namespace, Name string
	} `json:"objectRef"`
	ResponseStatus struct {
		Code   int    `json:"code"`
		Reason string `json:"reason"`
	} `json:"responseStatus"`
	At time.Time `json:"stageTimestamp"` // when it was answered
}

// what names the write as a tally's key: resource[/subresource] verb, and
// why it was refused, if it was (conflict: a stale resourceVersion).
func (w write) what() string {
	r := w.ObjectRef.Resource
	if w.ObjectRef.Subresource != "" {
		r += "/" + w.ObjectRef.Subresource
	}
	s := r + " " + w.Verb
	if w.ResponseStatus.Code >= 300 {
		s += fmt.Sprintf(" (%s)", cmpOr(w.ResponseStatus.Reason, strconv.Itoa(w.ResponseStatus.Code)))
	}
	return s
}

// writes reads the writes logged since the last call (whole lines only).
func (p *auditedPlane) writes(t *testing.T) []write {
	t.Helper()
	f, err := os.Open(p.log)
	if os.IsNotExist(err) { // nothing written yet
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(p.read, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var out []write
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // the end, or a line the API server is still writing
			return out
		}
		p.read += int64(len(line))
		var w write
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		out = append(out, w)
	}
}

// tally counts writes by what they are.
type tally map[string]int

// add counts the writes of agent (a user-agent's program name) in namespace ns
// answered within (from, to]; a write elsewhere (cluster-scoped, or another
// namespace) is counted under "elsewhere".
func (c tally) add(ws []write, agent, ns string, from, to time.Time) {
	for _, w := range ws {
		if !strings.HasPrefix(w.UserAgent, agent+"/") || !w.At.After(from) || w.At.After(to) {
			continue
		}
		key := w.what()
		if w.ObjectRef.Namespace != ns {
			key = fmt.Sprintf("elsewhere (%s): %s", cmpOr(w.ObjectRef.Namespace, "cluster"), key)
		}
		c[key]++
	}
}

// conflict marks a write refused for a stale resourceVersion.
const conflict = " (Conflict)"

// of sums the tally's counts whose key starts with prefix and ends with suffix.
func (c tally) of(prefix, suffix string) int {
	n := 0
	for k, v := range c {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
			n += v
		}
	}
	return n
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
