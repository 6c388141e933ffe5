package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

const faultDataCut = "data-cut"

const invDataOp = "a reset or restore cut short ends done, in one state"

// dataCut is a restore or reset the cycle cut short, and what it must end in.
type dataCut struct {
	rec     *record
	id      string
	action  sandboxv1.DataAction
	name    string // the checkpoint taken before, and restored or taken again by the cut request
	engines []string
	daemon  bool // cut by a dockerd restart (tmpfs lost), not a manager SIGKILL
}

// The value each engine holds: as checkpointed, then as written after.
const (
	valCheckpointed = "checkpointed"
	valWritten      = "written"
)

// cutData checkpoints a known value in a live Sandbox's postgres and redis
// under one of three names, writes another, asks for a restore, a reset or
// a checkpoint of that name again, and cuts it at a random instant: a
// SIGKILL of the manager driving the host, or a dockerd restart.
func (r *run) cutData(ctx context.Context, c *cycle, rnd *rand.Rand) error {
	r.w.ops.Lock()
	defer r.w.ops.Unlock()
	sb, err := r.pick(ctx, rnd)
	if err != nil || sb == nil || !ready(sb) {
		return nil // a fault of another kind is still settling: nothing to cut
	}
	rec := r.w.record(sb.Name)
	cut := &dataCut{rec: rec, id: fmt.Sprintf("cut-%d", c.n), action: sandboxv1.DataRestore, name: []string{"", "a", "b"}[rnd.IntN(3)]}
	for _, e := range []string{"postgres", "redis"} {
		if rec != nil && rec.containers[e] != "" {
			cut.engines = append(cut.engines, e)
		}
	}
	if len(cut.engines) == 0 {
		return nil
	}
	for _, e := range cut.engines {
		if err := r.setValue(ctx, rec, e, valCheckpointed); err != nil {
			c.target = sb.Name + " (not written: " + err.Error() + ")"
			return nil
		}
	}
	ck := fmt.Sprintf("ck-%d", c.n)
	if err := r.requestData(ctx, sb.Name, ck, sandboxv1.DataCheckpoint, cut.name, cut.engines); err != nil {
		return err
	}
	if phase, msg := r.dataDone(ctx, sb.Name, ck, r.s.bound); phase != sandboxv1.DataSucceeded {
		r.violate(invDataOp, fmt.Sprintf("%s: checkpoint %s before the cut: %s %s", sb.Name, ck, phase, msg))
		return nil
	}
	for _, e := range cut.engines {
		_ = r.setValue(ctx, rec, e, valWritten)
	}
	switch rnd.IntN(3) {
	case 0:
		cut.action = sandboxv1.DataReset
		for _, e := range cut.engines {
			c.cause.services[string(rec.uid)+"/"+e] = true // a reset explains the data marker's loss
		}
	case 1:
		cut.action = sandboxv1.DataCheckpoint
	}
	name := cut.name
	if cut.action == sandboxv1.DataReset {
		name = ""
	}
	if err := r.requestData(ctx, sb.Name, cut.id, cut.action, name, cut.engines); err != nil {
		return err
	}
	sleep(ctx, between(rnd, time.Millisecond, 400*time.Millisecond))
	c.data = cut
	if cut.daemon = rnd.IntN(3) == 0; cut.daemon {
		c.target = fmt.Sprintf("%s %s of %s, by a dockerd restart", cut.action, sb.Name, cut.engines)
		c.cause.all = true
		return r.restartDockerd(between(rnd, 2*time.Second, 6*time.Second))
	}
	i, err := r.mainHolder(ctx)
	if err != nil {
		return err
	}
	c.target = fmt.Sprintf("%s %s of %s, by a SIGKILL of replica %d", cut.action, sb.Name, cut.engines, i)
	r.mgrs[i].kill(between(rnd, 0, 2*time.Second))
	return nil
}

// checkDataCut: the cut request ends done, and each engine holds the one
// state it leads to, never the value written before it: the checkpoint's
// (restore) or none (reset); after a dockerd restart (tmpfs lost) none, and
// a restore may fail for want of its checkpoint.
func (r *run) checkDataCut(ctx context.Context, c *cycle) {
	cut := c.data
	if cut == nil || cut.rec == nil || cut.rec.deleteAsked {
		return
	}
	phase, msg := r.dataDone(ctx, cut.rec.name, cut.id, r.s.bound)
	switch {
	case phase == sandboxv1.DataFailed && cut.daemon && strings.Contains(msg, "no checkpoint"):
	case phase != sandboxv1.DataSucceeded:
		r.violate(invDataOp, fmt.Sprintf("%s: %s %s ended %q: %s", cut.rec.name, cut.action, cut.id, phase, msg))
		return
	}
	want := map[bool]string{true: valCheckpointed, false: ""}[cut.action == sandboxv1.DataRestore && !cut.daemon]
	if cut.action == sandboxv1.DataCheckpoint && !r.restoreCut(ctx, cut) {
		return
	}
	if cut.action == sandboxv1.DataCheckpoint && !cut.daemon {
		want = valWritten
	}
	for _, e := range cut.engines {
		got, err := r.value(ctx, cut.rec, e)
		if err != nil {
			r.violate(invDataOp, fmt.Sprintf("%s's %s after %s %s: %v", cut.rec.name, e, cut.action, cut.id, err))
			continue
		}
		if got != want && (!cut.daemon || got != "") {
			r.violate(invDataOp, fmt.Sprintf("%s's %s holds %q after %s %s (cut short); want %q", cut.rec.name, e, got, cut.action, cut.id, want))
		}
	}
}

func ready(sb *sandboxv1.Sandbox) bool {
	for _, c := range sb.Status.Conditions {
		if c.Type == sandboxv1.ConditionReady {
			return c.Status == "True" && sb.Status.ObservedGeneration == sb.Generation
		}
	}
	return false
}

// restoreCut restores the checkpoint a cut request took again, so that its
// data is checked: the one written before the cut, whole (or, after a dockerd
// restart, none, or no checkpoint at all). ok is false when that is all.
func (r *run) restoreCut(ctx context.Context, cut *dataCut) (ok bool) {
	id := cut.id + "-restore"
	if err := r.requestData(ctx, cut.rec.name, id, sandboxv1.DataRestore, cut.name, cut.engines); err != nil {
		r.violate(invDataOp, fmt.Sprintf("%s: asking to restore the checkpoint %s took: %v", cut.rec.name, cut.id, err))
		return false
	}
	phase, msg := r.dataDone(ctx, cut.rec.name, id, r.s.bound)
	switch {
	case phase == sandboxv1.DataFailed && cut.daemon && strings.Contains(msg, "no checkpoint"):
		return false
	case phase != sandboxv1.DataSucceeded:
		r.violate(invDataOp, fmt.Sprintf("%s: restoring the checkpoint %s took (cut short): %q: %s", cut.rec.name, cut.id, phase, msg))
		return false
	}
	return true
}

// requestData asks for action of the checkpoint name ("": latest, or none).
func (r *run) requestData(ctx context.Context, name, id string, action sandboxv1.DataAction, checkpoint string, engines []string) error {
	var n any
	if checkpoint != "" {
		n = checkpoint
	}
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"data": map[string]any{"id": id, "action": action, "services": engines, "name": n}}})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sb := &sandboxv1.Sandbox{}
	sb.Namespace, sb.Name = r.w.ns, name
	return r.h.k8s.Patch(cctx, sb, client.RawPatch(types.MergePatchType, body))
}

// dataDone waits (within limit) until status.data reports id finished.
func (r *run) dataDone(ctx context.Context, name, id string, limit time.Duration) (sandboxv1.DataPhase, string) {
	var last string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline) && ctx.Err() == nil; sleep(ctx, 200*time.Millisecond) {
		sb := &sandboxv1.Sandbox{}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.h.k8s.Get(cctx, client.ObjectKey{Namespace: r.w.ns, Name: name}, sb)
		cancel()
		if err != nil || sb.Status.Data == nil {
			continue
		}
		d := sb.Status.Data
		last = fmt.Sprintf("%s/%s: %s", d.ID, d.Phase, d.Message)
		if d.ID == id && d.Phase != sandboxv1.DataRunning {
			return d.Phase, d.Message
		}
	}
	return "", "not done within " + limit.String() + " (last: " + last + ")"
}

// setValue and value write and read the cut's value in a service of rec,
// with the password its Secret publishes, in the container its status names.
func (r *run) setValue(ctx context.Context, rec *record, engine, v string) error {
	if engine == "redis" {
		_, err := r.serviceCmd(ctx, rec, engine, "SET", "chaos-data", v)
		return err
	}
	_, err := r.serviceCmd(ctx, rec, engine, fmt.Sprintf(
		"CREATE TABLE IF NOT EXISTS chaos_data (v text); DELETE FROM chaos_data; INSERT INTO chaos_data VALUES ('%s')", v))
	return err
}

func (r *run) value(ctx context.Context, rec *record, engine string) (string, error) {
	if engine == "redis" {
		return r.serviceCmd(ctx, rec, engine, "GET", "chaos-data")
	}
	// Note: a query naming a missing table fails to plan, whatever its WHERE says.
	if exists, err := r.serviceCmd(ctx, rec, engine, "SELECT to_regclass('chaos_data') IS NOT NULL"); err != nil || exists != "t" {
		return "", err
	}
	return r.serviceCmd(ctx, rec, engine, "SELECT coalesce(string_agg(v, ','), '') FROM chaos_data")
}

// serviceCmd runs redis-cli args, or psql with the SQL in args[0], in the
// service's current container.
func (r *run) serviceCmd(ctx context.Context, rec *record, engine string, args ...string) (string, error) {
	sb := &sandboxv1.Sandbox{}
	if err := r.h.k8s.Get(ctx, client.ObjectKey{Namespace: r.w.ns, Name: rec.name}, sb); err != nil {
		return "", err
	}
	var id string
	for _, s := range sb.Status.Services {
		if string(s.Engine) == engine {
			id = s.ContainerID
		}
	}
	pw, err := r.passwords(ctx, rec)
	keys, _ := sandboxv1.KeysOf(sandboxv1.Engine(engine))
	if err != nil || id == "" {
		return "", fmt.Errorf("no container or password yet: %w", cmp.Or(err, errors.New("no container in status")))
	}
	if engine == "redis" {
		return r.redis(ctx, id, pw[keys.Password], args...)
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := r.h.daemon.Docker(cctx, "exec", "-e", "PGPASSWORD="+pw[keys.Password], id,
		"psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "sandbox", "-d", "sandbox", "-c", args[0])
	return strings.TrimSpace(out), err
}
