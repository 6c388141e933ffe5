// Package quota is the admission of Sandboxes and pools under their namespace's
// SandboxQuotas. A quota holds aggregates only: used, and the admissions in
// flight (status.admitted). An object's admitted amounts live in its own status
// (status.admitted, which tenants cannot write). Any change that takes more is
// judged again, by adding the growth to used with the quota's resourceVersion
// as a precondition, so that concurrent admissions (any worker, any replica)
// never pass hard together. The quota reconciler (controllers/quota) recounts
// used from the objects and drops the entries their statuses record (Recount).
package quota

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Request asks room for up to Count units of Unit for one object; at least Min
// are admitted whatever the quota says (what already runs: a quota made or
// lowered later evicts nothing, as Kubernetes' ResourceQuota does not).
// Recorded is what the object's status says it was admitted to (nil: nothing).
// Hold keeps the object at Recorded when fewer than Count units fit (a
// Sandbox's refused growth leaves what runs as it is); otherwise it is
// admitted the units that fit.
type Request struct {
	Namespace, Name, Kind string
	UID                   types.UID
	Unit                  Amounts
	Count, Min            int32
	Recorded              *Amounts
	Hold                  bool
}

// recorded is what the object's status records (nothing when it records none).
func (r Request) recorded() Amounts {
	if r.Recorded == nil {
		return Amounts{}
	}
	return *r.Recorded
}

// want is what k units of r take.
func (r Request) want(k int32) Amounts { return r.Unit.Times(k) }

// Verdict is how many units were admitted, and when fewer than asked, why.
type Verdict struct {
	Admitted int32
	Why      string
}

// Amounts returns what the verdict admitted of r, for the object's status.
func (v Verdict) Amounts(r Request) Amounts { return r.want(v.Admitted) }

// Admit judges r against every SandboxQuota of its namespace: as many units as
// all of them have room for (at least r.Min), counting the object at what they
// count it now (its entry in flight, else r.Recorded). Only growth is judged:
// an amount that does not grow passes whatever the quota says. The quotas that
// count the object at another amount are written (read live: the precondition
// needs a current resourceVersion); a conflict is returned for the caller to
// retry. When the cache shows every quota counting the object at the wanted
// amounts (the common pass), nothing is read from the API server.
func Admit(ctx context.Context, c client.Client, api client.Reader, r Request) (Verdict, error) {
	var quotas sandboxv1.SandboxQuotaList
	if err := c.List(ctx, &quotas, client.InNamespace(r.Namespace)); err != nil {
		return Verdict{}, err
	}
	if allCount(quotas.Items, r, r.want(r.Count)) {
		return Verdict{Admitted: r.Count}, nil
	}
	if err := api.List(ctx, &quotas, client.InNamespace(r.Namespace)); err != nil {
		return Verdict{}, err
	}
	k, why := r.Count, ""
	for i := range quotas.Items {
		q := &quotas.Items[i]
		if room := roomFor(q, r); room < k {
			k, why = room, exceeded(q, r)
		}
	}
	if k < r.Min {
		k, why = r.Min, cmpOr(why, "admitted what already runs")
	}
	target := r.want(k)
	if k < r.Count && r.Hold {
		target = r.recorded()
	}
	for i := range quotas.Items {
		if err := set(ctx, c, &quotas.Items[i], r, target); err != nil {
			return Verdict{}, err
		}
	}
	if k >= r.Count {
		why = ""
	}
	return Verdict{Admitted: k, Why: why}, nil
}

// Release drops uid's admission in flight from every SandboxQuota of the
// namespace (idempotent: conflicts are retried, a second release finds none).
// What the object's status recorded leaves used with the quota's recount once
// the object is gone (its deletion re-queues the quota). Only the quotas the
// cache shows holding an entry for uid are read live (an entry is only ever
// added through the API server, so the cache may lag with one, never show one
// that is not there; the recount drops what a lagging cache hid from here).
func Release(ctx context.Context, c client.Client, api client.Reader, namespace string, uid types.UID) error {
	var quotas sandboxv1.SandboxQuotaList
	if err := c.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		return err
	}
	for _, q := range quotas.Items {
		if indexOf(&q, uid) < 0 {
			continue
		}
		key := client.ObjectKeyFromObject(&q)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &sandboxv1.SandboxQuota{}
			if err := api.Get(ctx, key, cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			i := indexOf(cur, uid)
			if i < 0 {
				return nil
			}
			used := FromUsed(cur.Status.Used)
			used.Sub(FromEntry(cur.Status.Admitted[i]))
			cur.Status.Admitted = append(cur.Status.Admitted[:i:i], cur.Status.Admitted[i+1:]...)
			setUsed(cur, used)
			return c.Status().Update(ctx, cur)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// counted is what q counts of r's object now: its entry in flight, else its record.
func counted(q *sandboxv1.SandboxQuota, r Request) (Amounts, bool) {
	if i := indexOf(q, r.UID); i >= 0 {
		return FromEntry(q.Status.Admitted[i]), true
	}
	if r.Recorded != nil {
		return *r.Recorded, false
	}
	return Amounts{}, false
}

// allCount: every quota counts r's object at want.
func allCount(qs []sandboxv1.SandboxQuota, r Request, want Amounts) bool {
	for i := range qs {
		if got, _ := counted(&qs[i], r); !got.Equal(want) {
			return false
		}
	}
	return true
}

// set makes q count r's object at want: used moves by the difference, and the
// entry in flight says want until the object's status records it (none when
// want is what the status records already). Nothing is written when q counts
// it so (an entry the status has recorded since is the recount's to drop: no
// write on an admission's path).
func set(ctx context.Context, c client.Client, q *sandboxv1.SandboxQuota, r Request, want Amounts) error {
	got, _ := counted(q, r)
	if got.Equal(want) {
		return nil
	}
	recorded := r.recorded().Equal(want)
	used := FromUsed(q.Status.Used)
	used.Sub(got)
	used.Add(want)
	i := indexOf(q, r.UID)
	if i >= 0 {
		q.Status.Admitted = append(q.Status.Admitted[:i:i], q.Status.Admitted[i+1:]...)
	}
	if !recorded {
		q.Status.Admitted = append(q.Status.Admitted, want.Entry(r.UID, r.Kind, r.Name))
	}
	setUsed(q, used)
	return c.Status().Update(ctx, q)
}

// setUsed writes used and the summary kubectl shows.
func setUsed(q *sandboxv1.SandboxQuota, u Amounts) {
	q.Status.Hard = *q.Spec.Hard.DeepCopy()
	q.Status.Used = u.Used()
	q.Status.Summary = summary(q.Status.Hard, u)
}

func indexOf(q *sandboxv1.SandboxQuota, uid types.UID) int {
	for i, a := range q.Status.Admitted {
		if a.UID == uid {
			return i
		}
	}
	return -1
}

// roomFor is how many units of r fit in q beside everything else it counts.
// Only what grows past what q counts of the object is judged.
func roomFor(q *sandboxv1.SandboxQuota, r Request) int32 {
	got, _ := counted(q, r)
	for k := r.Count; k > 0; k-- {
		if fits(q, got, r.want(k)) {
			return k
		}
	}
	return 0
}

// fits: moving the object from got to want in q passes no limit of q that it grows.
func fits(q *sandboxv1.SandboxQuota, got, want Amounts) bool {
	h, u := q.Spec.Hard, FromUsed(q.Status.Used)
	u.Sub(got)
	u.Add(want)
	if h.Sandboxes != nil && want.Sandboxes > got.Sandboxes && u.Sandboxes > *h.Sandboxes {
		return false
	}
	if h.PoolMembers != nil && want.PoolMembers > got.PoolMembers && u.PoolMembers > *h.PoolMembers {
		return false
	}
	return h.Memory == nil || want.Memory.Cmp(got.Memory) <= 0 || u.Memory.Cmp(*h.Memory) <= 0
}

// exceeded says what of q all of r would pass: the quota, used, the need and hard.
func exceeded(q *sandboxv1.SandboxQuota, r Request) string {
	h := q.Spec.Hard
	got, _ := counted(q, r)
	u := FromUsed(q.Status.Used)
	u.Sub(got)
	need := r.want(r.Count)
	var parts []string
	if h.Sandboxes != nil && need.Sandboxes > got.Sandboxes && u.Sandboxes+need.Sandboxes > *h.Sandboxes {
		parts = append(parts, fmt.Sprintf("sandboxes: used %d, requested %d, hard %d", u.Sandboxes, need.Sandboxes, *h.Sandboxes))
	}
	if h.PoolMembers != nil && need.PoolMembers > got.PoolMembers && u.PoolMembers+need.PoolMembers > *h.PoolMembers {
		parts = append(parts, fmt.Sprintf("poolMembers: used %d, requested %d, hard %d", u.PoolMembers, need.PoolMembers, *h.PoolMembers))
	}
	if h.Memory != nil && need.Memory.Cmp(got.Memory) > 0 {
		total := u.Memory.DeepCopy()
		total.Add(need.Memory)
		if total.Cmp(*h.Memory) > 0 {
			parts = append(parts, fmt.Sprintf("memory: used %s, requested %s, hard %s", qty(u.Memory), qty(need.Memory), h.Memory.String()))
		}
	}
	return fmt.Sprintf("exceeded SandboxQuota %s: %s; admitted once room frees", q.Name, strings.Join(parts, "; "))
}

// summary is "sandboxes 3/10, poolMembers 2/20, memory 768Mi/4Gi" (limited amounts only).
func summary(h sandboxv1.QuotaAmounts, u Amounts) string {
	var parts []string
	if h.Sandboxes != nil {
		parts = append(parts, fmt.Sprintf("sandboxes %d/%d", u.Sandboxes, *h.Sandboxes))
	}
	if h.PoolMembers != nil {
		parts = append(parts, fmt.Sprintf("poolMembers %d/%d", u.PoolMembers, *h.PoolMembers))
	}
	if h.Memory != nil {
		parts = append(parts, fmt.Sprintf("memory %s/%s", qty(u.Memory), h.Memory.String()))
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, ", ")
}

// qty prints a byte count in binary units (0 as "0").
func qty(q resource.Quantity) string {
	return resource.NewQuantity(q.Value(), resource.BinarySI).String()
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
