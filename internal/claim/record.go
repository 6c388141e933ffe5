package claim

import (
	"maps"
	"strings"
	"sync"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
)

// A claim record says which pool member serves a Sandbox's service: the member's
// container ID and the hash of the credentials it is rotated to. It is written
// on the Sandbox (AnnotationClaimPrefix + engine) before the rename that makes
// the claim, so neither a crash nor a lost status orphans or duplicates a member:
// what proves a claimed member is the Sandbox's is the record naming its ID, the
// member's labels naming a pool of the Sandbox's namespace, and Docker's unique
// name (a member not yet renamed is replaced, one renamed is the service).
type Record struct{ ID, Credentials string }

func (c Record) String() string { return c.ID + "/" + c.Credentials }

// Records reads a Sandbox's claim records, by engine.
func Records(sb *sandboxv1.Sandbox) map[string]Record {
	out := map[string]Record{}
	for k, v := range sb.Annotations {
		engine, ok := strings.CutPrefix(k, sandboxv1.AnnotationClaimPrefix)
		id, creds, ok2 := strings.Cut(v, "/")
		if ok && ok2 && id != "" {
			out[engine] = Record{ID: id, Credentials: creds}
		}
	}
	return out
}

// Recent are the claim records this manager wrote and its cache may not
// show yet, by Sandbox UID and engine: a pass that reads a Sandbox from the cache
// right after a claim still sees the member as its own.
type Recent struct {
	mu sync.Mutex
	m  map[types.UID]map[string]Record
}

func (rc *Recent) Add(uid types.UID, engine string, c Record) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil {
		rc.m = map[types.UID]map[string]Record{}
	}
	if rc.m[uid] == nil {
		rc.m[uid] = map[string]Record{}
	}
	rc.m[uid][engine] = c
}

// Of merges sb's records with the recent ones, the recent winning (newer).
func (rc *Recent) Of(sb *sandboxv1.Sandbox) map[string]Record {
	out := Records(sb)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	maps.Copy(out, rc.m[sb.UID])
	return out
}

func (rc *Recent) Forget(uid types.UID) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.m, uid)
}
