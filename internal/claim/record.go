// Package claim is the claim record of a warm pool member: which member serves a
// Sandbox's service. It is the one place that writes and parses it.
package claim

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// A Record says which pool member serves a Sandbox's service: the member's
// container ID and the hash of the credentials it is rotated to. It is written
// on the Sandbox (AnnotationClaimPrefix + engine) before the rename that makes
// the claim, so neither a crash nor a lost status orphans or duplicates a member:
// what proves a claimed member is the Sandbox's is the record naming its ID, the
// member's labels naming a pool of the Sandbox's namespace, and Docker's unique
// name (a member not yet renamed is replaced, one renamed is the service).
type Record struct{ ID, Credentials string }

func (c Record) String() string { return c.ID + "/" + c.Credentials }

// Records reads a Sandbox's claim records, by engine.
func Records(sb *sandboxv1.Sandbox) map[string]Record { return RecordsIn(sb.Annotations) }

// RecordsIn reads the claim records among an object's annotations, by engine.
func RecordsIn(annotations map[string]string) map[string]Record {
	out := map[string]Record{}
	for k, v := range annotations {
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

// Write records rec as the claim of sb's service of engine (a merge patch of one
// annotation: services claiming at once do not conflict), then remembers it
// until the cache shows it.
func (rc *Recent) Write(ctx context.Context, c client.Writer, sb *sandboxv1.Sandbox, engine string, rec Record) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		sandboxv1.AnnotationClaimPrefix + engine: rec.String()}}})
	if err != nil {
		return err
	}
	target := &sandboxv1.Sandbox{}
	target.Namespace, target.Name = sb.Namespace, sb.Name
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	rc.add(sb.UID, engine, rec)
	return nil
}

func (rc *Recent) add(uid types.UID, engine string, c Record) {
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

// Forget drops what is remembered of a Sandbox that is gone.
func (rc *Recent) Forget(uid types.UID) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.m, uid)
}
