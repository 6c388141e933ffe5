// Package claim is the claim record of a warm pool member: which member serves a
// Sandbox's service. It is the one place that writes and reads it.
package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// A Record says which pool member serves a Sandbox's service: the member's
// container ID and the hash of the credentials it is rotated to. It is written
// in the Sandbox's status (status.claims[engine]), which only the controller
// writes, before the rename that makes the claim, so neither a crash nor an edit
// of the Sandbox orphans or duplicates a member: what proves a claimed member is
// the Sandbox's is the record naming its ID, the member's labels naming a pool of
// the Sandbox's namespace, and Docker's unique name (a member not yet renamed is
// replaced, one renamed is the service).
type Record struct{ ID, Credentials string }

func (c Record) String() string { return c.ID + "/" + c.Credentials }

// Records reads a Sandbox's claim records, by engine.
func Records(sb *sandboxv1.Sandbox) map[string]Record {
	out := make(map[string]Record, len(sb.Status.Claims))
	for engine, c := range sb.Status.Claims {
		if c.ContainerID != "" {
			out[engine] = Record{ID: c.ContainerID, Credentials: c.Credentials}
		}
	}
	return out
}

// Legacy reads the claim annotations (AnnotationClaimPrefix) of releases
// before status.claims, by engine: never a proof of a claim, only what to
// report and remove.
func Legacy(annotations map[string]string) map[string]Record {
	out := map[string]Record{}
	for k, v := range annotations {
		engine, ok := strings.CutPrefix(k, sandboxv1.AnnotationClaimPrefix)
		id, creds, _ := strings.Cut(v, "/")
		if ok {
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
	// epoch counts the Resets: a Write that began before one remembers nothing.
	epoch uint64
}

// Write records recs as the claims of sb's services, by engine, in its status
// (one merge patch of their keys only, and of the other status fields also
// holds: services claiming at once do not conflict), then remembers them
// until the cache shows them.
func (rc *Recent) Write(ctx context.Context, c client.Client, sb *sandboxv1.Sandbox, recs map[string]Record, also map[string]any) error {
	rc.mu.Lock()
	epoch := rc.epoch
	rc.mu.Unlock()
	claims := make(map[string]sandboxv1.ServiceClaim, len(recs))
	for engine, rec := range recs {
		claims[engine] = sandboxv1.ServiceClaim{ContainerID: rec.ID, Credentials: rec.Credentials}
	}
	status := map[string]any{"claims": claims}
	for k, v := range also {
		status[k] = v
	}
	target, patch, err := mergePatch(sb, map[string]any{"status": status})
	if err == nil {
		err = c.Status().Patch(ctx, target, patch)
	}
	if err != nil {
		return err
	}
	kit.NoteWrite(ctx, target)
	for engine, rec := range recs {
		rc.add(epoch, sb.UID, engine, rec)
	}
	return nil
}

// Undo puts back engine's record of sb as it was before a Write whose claim
// renamed nothing (prev; none when !had): the member it named is its pool's
// again. A record it drops is remembered as none until the cache shows it.
func (rc *Recent) Undo(ctx context.Context, c client.Client, sb *sandboxv1.Sandbox, engine string, prev Record, had bool) error {
	rc.mu.Lock()
	epoch := rc.epoch
	rc.mu.Unlock()
	var value any // a JSON null drops the key
	if had {
		value = sandboxv1.ServiceClaim{ContainerID: prev.ID, Credentials: prev.Credentials}
	} else {
		prev = Record{}
	}
	target, patch, err := mergePatch(sb, map[string]any{"status": map[string]any{"claims": map[string]any{engine: value}}})
	if err == nil {
		err = c.Status().Patch(ctx, target, patch)
	}
	if err != nil {
		return err
	}
	kit.NoteWrite(ctx, target)
	rc.add(epoch, sb.UID, engine, prev)
	return nil
}

// RemoveLegacy removes the claim annotations of the engines from sb; a Sandbox
// gone meanwhile is no error.
func RemoveLegacy(ctx context.Context, c client.Client, sb *sandboxv1.Sandbox, engines []string) error {
	drop := map[string]any{}
	for _, e := range engines {
		drop[sandboxv1.AnnotationClaimPrefix+e] = nil
	}
	target, patch, err := mergePatch(sb, map[string]any{"metadata": map[string]any{"annotations": drop}})
	if err == nil {
		err = c.Patch(ctx, target, patch)
	}
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing claim annotations: %w", err)
	}
	if err == nil {
		kit.NoteWrite(ctx, target)
	}
	return nil
}

// mergePatch is body as a JSON merge patch of sb, of its keys only: writers of
// other keys (services claiming at once) do not conflict.
func mergePatch(sb *sandboxv1.Sandbox, body map[string]any) (client.Object, client.Patch, error) {
	patch, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	target := &sandboxv1.Sandbox{}
	target.Namespace, target.Name = sb.Namespace, sb.Name
	return target, client.RawPatch(types.MergePatchType, patch), nil
}

// add remembers c unless the host was given up since epoch: a record from
// before is no newer than what the Sandbox's status says now.
func (rc *Recent) add(epoch uint64, uid types.UID, engine string, c Record) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if epoch != rc.epoch {
		return
	}
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
	maps.DeleteFunc(out, func(_ string, r Record) bool { return r.ID == "" }) // dropped (Undo)
	return out
}

// Reset drops every remembered record: the host was given up.
func (rc *Recent) Reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	clear(rc.m)
	rc.epoch++
}

// Forget drops what is remembered of a Sandbox that is gone.
func (rc *Recent) Forget(uid types.UID) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.m, uid)
}
