package controllers

import (
	"context"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// A claim record says which pool member serves a Sandbox's service: the member's
// container ID and the hash of the credentials it is rotated to. It is written
// on the Sandbox (AnnotationClaimPrefix + engine) before the rename that makes
// the claim, so neither a crash nor a lost status orphans or duplicates a member:
// what proves a claimed member is the Sandbox's is the record naming its ID, the
// member's labels naming a pool of the Sandbox's namespace, and Docker's unique
// name (a member not yet renamed is replaced, one renamed is the service).
type claimRecord struct{ id, credentials string }

func (c claimRecord) String() string { return c.id + "/" + c.credentials }

// claimsOf reads a Sandbox's claim records, by engine.
func claimsOf(sb *sandboxv1.Sandbox) map[string]claimRecord {
	out := map[string]claimRecord{}
	for k, v := range sb.Annotations {
		engine, ok := strings.CutPrefix(k, sandboxv1.AnnotationClaimPrefix)
		id, creds, ok2 := strings.Cut(v, "/")
		if ok && ok2 && id != "" {
			out[engine] = claimRecord{id: id, credentials: creds}
		}
	}
	return out
}

// recentClaims are the claim records this manager wrote and its cache may not
// show yet, by Sandbox UID and engine: a pass that reads a Sandbox from the cache
// right after a claim still sees the member as its own.
type recentClaims struct {
	mu sync.Mutex
	m  map[types.UID]map[string]claimRecord
}

func (rc *recentClaims) add(uid types.UID, engine string, c claimRecord) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.m == nil {
		rc.m = map[types.UID]map[string]claimRecord{}
	}
	if rc.m[uid] == nil {
		rc.m[uid] = map[string]claimRecord{}
	}
	rc.m[uid][engine] = c
}

// of merges sb's records with the recent ones, the recent winning (newer).
func (rc *recentClaims) of(sb *sandboxv1.Sandbox) map[string]claimRecord {
	out := claimsOf(sb)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	maps.Copy(out, rc.m[sb.UID])
	return out
}

func (rc *recentClaims) forget(uid types.UID) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.m, uid)
}

// ours lists the Sandbox's containers: those carrying its UID, and the pool
// members its claim records name that are proven its own: labelled by a pool of
// its namespace and this instance, and named as a member not yet claimed, as
// the Sandbox's service, or as set aside by it (never another Sandbox's).
func (r *SandboxReconciler) ours(ctx context.Context, sb *sandboxv1.Sandbox) ([]dd.ContainerSummary, map[string]claimRecord, error) {
	cs, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		return nil, nil, err
	}
	claims := r.claims.of(sb)
	if len(claims) == 0 {
		return cs, claims, nil
	}
	ids := map[string]bool{}
	for _, c := range claims {
		ids[c.id] = true
	}
	members, err := r.Driver.List(ctx, map[string]string{host.LabelNamespace: sb.Namespace, host.LabelInstance: r.Options.Instance})
	if err != nil {
		return nil, nil, err
	}
	for _, m := range members {
		e := m.Labels[host.LabelEngine]
		name := serviceContainerName(sb, e)
		if ids[m.ID] && m.Labels[host.LabelPoolUID] != "" && claims[e].id == m.ID &&
			(isMemberName(m.Name) || m.Name == name || host.IsAside(m.Name, name)) {
			cs = append(cs, m)
		}
	}
	return cs, claims, nil
}

// serviceContainerName is the container name of sb's service of engine name.
func serviceContainerName(sb *sandboxv1.Sandbox, name string) string {
	e, ok := engine.Lookup(name)
	if !ok {
		return ""
	}
	return engine.ContainerName(e, sb.Spec.AgentID)
}
