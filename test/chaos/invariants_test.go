package chaos

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// The invariants, as a violation names them.
const (
	invLeak     = "no leaked container, volume or Secret"
	invTwo      = "never two containers for one service"
	invPassword = "a live Sandbox's passwords never change"
	invDeleted  = "no live Sandbox deleted"
	invReady    = "every Sandbox Ready again within the bound"
	invHotLoop  = "no hot loop"
	invReplaced = "no running container replaced without a cause (data kept)"
	invForeign  = "nothing created or removed on a foreign Docker host"
	invPanic    = "the manager never panics"
)

const (
	// hotCreates bounds the creates of one container name in one cycle: a
	// cycle's faults explain a recreation or two, not a loop.
	hotCreates = 6
	// hotRate bounds the Docker calls per live Sandbox per minute, over a cycle.
	hotRate = 120
)

type violation struct {
	cycle     int
	fault     string
	invariant string
	detail    string
}

func (v violation) String() string {
	return fmt.Sprintf("cycle %d (%s): %s: %s", v.cycle, v.fault, v.invariant, v.detail)
}

// cause is what a cycle's fault explains: a container replaced, a password changed.
type cause struct {
	all       bool            // every container (the daemon restarted)
	sandboxes map[string]bool // every service of these UIDs (their Secret was deleted)
	services  map[string]bool // "uid/engine" (removed out of band)
}

func (c cause) explains(uid, engine string) bool {
	return c.all || c.sandboxes[uid] || c.services[uid+"/"+engine]
}

// container is one sandbox container on the suite's daemon.
type container struct {
	id, name, state, uid, engine string
	credentials                  string // the hash of the password it was made with (a claim's: rotated to)
	// pool is a pool member's pool UID; a claimed member's uid is its
	// Sandbox's once attributed (claimants.attribute), else empty.
	pool string
}

// setAside says whether c is a dead container renamed <name>-dead-<id> because
// Docker could not remove it: it serves nothing.
func (c container) setAside() bool { return strings.Contains(c.name, "-dead-") && c.state != "running" }

// containers lists the containers of the run's instance.
func (h *harness) containers(ctx context.Context, instance string) ([]container, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := h.daemon.Docker(cctx, "ps", "-a", "--no-trunc", "--filter", "label=sandbox.roboco.io/instance="+instance, "--format",
		`{{.ID}}|{{.Names}}|{{.State}}|{{.Label "sandbox.roboco.io/uid"}}|{{.Label "sandbox.roboco.io/engine"}}|{{.Label "sandbox.roboco.io/credentials"}}|{{.Label "sandbox.roboco.io/pool-uid"}}`)
	if err != nil {
		return nil, err
	}
	var cs []container
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 7 {
			cs = append(cs, container{id: f[0], name: f[1], state: f[2], uid: f[3], engine: f[4], credentials: f[5], pool: f[6]})
		}
	}
	return cs, nil
}

// twoPerService names the services that have more than one container. A dead one
// set aside (renamed <name>-dead-<id>: Docker could not remove it) serves nothing,
// and is no second container; nor is an unclaimed (or unattributed) member.
func twoPerService(cs []container) []string {
	by := map[string][]string{}
	for _, c := range cs {
		if c.setAside() || c.uid == "" {
			continue
		}
		by[c.uid+"/"+c.engine] = append(by[c.uid+"/"+c.engine], c.name+" "+c.id+" "+c.state)
	}
	var out []string
	for k, v := range by {
		if len(v) > 1 {
			out = append(out, fmt.Sprintf("%s: %v", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// sampler lists the containers every second while a run lasts, so two containers
// for one service are seen even when they last less than a cycle.
type sampler struct {
	mu   sync.Mutex
	seen map[string]bool
	hits []string
}

func (s *sampler) run(ctx context.Context, h *harness, instance string) {
	for ctx.Err() == nil {
		if cs, err := h.containers(ctx, instance); err == nil {
			s.mu.Lock()
			for _, d := range twoPerService(cs) {
				if !s.seen[d] {
					s.seen[d] = true
					s.hits = append(s.hits, d)
				}
			}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *sampler) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.hits
	s.hits = nil
	return out
}

// state is one look at everything: what is not yet as it should be after a fault.
type state struct {
	notReady, stillThere, orphans, volumes, secrets, members []string
	containers                                               []container
	// shared names the containers two Sandboxes record (a violation at once).
	shared []string
}

func (s state) settled() bool {
	return len(s.notReady)+len(s.stillThere)+len(s.orphans)+len(s.volumes)+len(s.secrets)+len(s.members) == 0
}

// look resolves what the workload does not know yet (a create or a delete whose
// answer was lost) and says what is not settled. Sandboxes that vanished although
// nobody deleted them are reported through lost.
func (r *run) look(ctx context.Context, lost func(rec *record, why string)) (state, error) {
	var st state
	sbs, err := r.w.sandboxes(ctx)
	if err != nil {
		return st, err
	}
	if st.containers, err = r.h.containers(ctx, r.instance); err != nil {
		return st, err
	}
	cl := claimantsOf(sbs)
	cl.attribute(st.containers)
	st.shared = cl.shared()
	pools, err := r.w.livePools(ctx)
	if err != nil {
		return st, err
	}
	st.members = memberLeaks(st.containers, pools)
	live := map[string]bool{}
	for _, rec := range r.w.records() {
		sb := sbs[rec.name]
		switch {
		case rec.uid == "" && sb != nil:
			rec.uid = sb.UID
		case rec.uid == "":
			r.w.forget(ctx, rec) // the create never happened
			continue
		case sb == nil || sb.UID != rec.uid:
			if rec.deleteAsked {
				r.w.forget(ctx, rec)
			} else {
				lost(rec, fmt.Sprintf("Sandbox %s (uid %s, services %v) is gone, and nobody deleted it", rec.name, rec.uid, rec.engines))
				r.w.forget(ctx, rec)
			}
			continue
		}
		live[string(rec.uid)] = true
		if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			st.notReady = append(st.notReady, describeReady(sb, c))
		} else if rec.rotating && !r.rotated(ctx, rec, st.containers) {
			st.notReady = append(st.notReady, sb.Name+": its Secret was deleted; new passwords and containers not seen yet")
		}
	}
	for _, rec := range r.w.goneRecords() {
		if sb := sbs[rec.name]; sb != nil && (rec.uid == "" || sb.UID == rec.uid) {
			st.stillThere = append(st.stillThere, describeReady(sb, meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady)))
			live[string(sb.UID)] = true // its containers and Secret go with its teardown
			continue
		}
		r.w.forgetGone(ctx, rec)
	}
	for _, c := range st.containers {
		if c.uid != "" && !live[c.uid] || c.uid == "" && c.pool == "" {
			st.orphans = append(st.orphans, fmt.Sprintf("%s (%s, uid %s)", c.name, c.state, c.uid))
		}
	}
	if st.volumes, err = r.h.danglingVolumes(ctx); err != nil {
		return st, err
	}
	st.secrets, err = r.orphanSecrets(ctx, live, pools)
	return st, err
}

func describeReady(sb *sandboxv1.Sandbox, c *metav1.Condition) string {
	if c == nil {
		return sb.Name + ": no Ready condition"
	}
	return fmt.Sprintf("%s: Ready=%s %s: %s", sb.Name, c.Status, c.Reason, c.Message)
}

// orphanSecrets lists the Secrets of the namespace whose Sandbox (or pool: its
// key) is gone.
func (r *run) orphanSecrets(ctx context.Context, live, pools map[string]bool) ([]string, error) {
	list := &corev1.SecretList{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.h.k8s.List(cctx, list, client.InNamespace(r.w.ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		owner := metav1.GetControllerOf(&s)
		if owner == nil || !live[string(owner.UID)] && !pools[string(owner.UID)] {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// passwords reads the passwords a Sandbox's Secret holds now.
func (r *run) passwords(ctx context.Context, rec *record) (map[string]string, error) {
	s := &corev1.Secret{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.h.k8s.Get(cctx, client.ObjectKey{Namespace: r.w.ns, Name: rec.name + "-sandbox"}, s); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range s.Data {
		if strings.HasSuffix(k, "_PASSWORD") {
			out[k] = string(v)
		}
	}
	return out, nil
}

// rotated says whether a Sandbox whose Secret was deleted has new passwords and
// every service a container made with them (by its credentials label): until
// then, a container of the old passwords is still to be replaced. Note: by the
// label, not by the container IDs of the last check, which a Sandbox created
// within the cycle does not have yet (cycle 63 of a 100-cycle run took its old
// container, still running, for the new one).
func (r *run) rotated(ctx context.Context, rec *record, cs []container) bool {
	pw, err := r.passwords(ctx, rec)
	if err != nil || maps.Equal(pw, rec.passwords) {
		return false
	}
	for _, c := range cs {
		if c.uid != string(rec.uid) || c.setAside() {
			continue
		}
		keys, ok := sandboxv1.KeysOf(sandboxv1.Engine(c.engine))
		if !ok || c.credentials != host.CredentialsHash(pw[keys.Password]) {
			return false
		}
	}
	return true
}
