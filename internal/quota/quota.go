// Package quota is the admission of Sandboxes and pools under their namespace's
// SandboxQuotas: a ledger of admitted objects in each quota's status, written
// before the object's first container with the quota's resourceVersion as a
// precondition, so that concurrent admissions (any worker, any replica) never
// pass hard together. The quota reconciler (controllers/quota) drops the
// entries of objects that are gone and keeps used and the metrics.
package quota

import (
	"context"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Amounts is what one unit of an object takes.
type Amounts struct {
	Sandboxes   int32
	PoolMembers int32
	Memory      resource.Quantity
}

// Request asks room for up to Count units of Unit for one object; at least Min
// are admitted whatever the quota says (what already runs: a quota made or
// lowered later evicts nothing, as Kubernetes' ResourceQuota does not).
type Request struct {
	Namespace, Name, Kind string
	UID                   types.UID
	Unit                  Amounts
	Count, Min            int32
}

// Verdict is how many units were admitted, and when fewer than asked, why.
type Verdict struct {
	Admitted int32
	Why      string
}

// Admit records r in every SandboxQuota of its namespace, as many units as all
// of them have room for (read live: the precondition needs a current
// resourceVersion). An object already recorded keeps what it has. A conflict
// is returned for the caller to retry. When the cache shows every quota holding
// all of r already (the common pass), nothing is read from the API server.
func Admit(ctx context.Context, c client.Client, api client.Reader, r Request) (Verdict, error) {
	var quotas sandboxv1.SandboxQuotaList
	if err := c.List(ctx, &quotas, client.InNamespace(r.Namespace)); err != nil {
		return Verdict{}, err
	}
	if allHold(quotas.Items, r) {
		return Verdict{Admitted: r.Count}, nil
	}
	if err := api.List(ctx, &quotas, client.InNamespace(r.Namespace)); err != nil {
		return Verdict{}, err
	}
	k, why := r.Count, ""
	minimum := r.Min
	for i := range quotas.Items {
		minimum = max(minimum, min(recorded(&quotas.Items[i], r), r.Count))
	}
	for i := range quotas.Items {
		q := &quotas.Items[i]
		if room := roomFor(q, r); room < k {
			k, why = room, exceeded(q, r)
		}
	}
	k = max(k, minimum)
	if k < r.Count && why == "" {
		why = "admitted what already runs"
	}
	for i := range quotas.Items {
		q := &quotas.Items[i]
		if holds(q, r, k) {
			continue
		}
		setEntry(q, r, k)
		if err := c.Status().Update(ctx, q); err != nil {
			return Verdict{}, err
		}
	}
	if k >= r.Count {
		why = ""
	}
	return Verdict{Admitted: k, Why: why}, nil
}

// Release removes uid from every SandboxQuota of the namespace: the object and
// all it made are gone. Conflicts are retried. Only the quotas the cache shows
// holding uid are read live (an entry is only ever added through the API
// server, so the cache may lag with one, never show one that is not there; the
// quota reconciler drops what a lagging cache hid from here).
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
			if !Drop(cur, func(a sandboxv1.QuotaAdmission) bool { return a.UID == uid }) {
				return nil
			}
			return c.Status().Update(ctx, cur)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Drop removes the entries gone says are gone, and recomputes used; it says
// whether it removed any.
func Drop(q *sandboxv1.SandboxQuota, gone func(sandboxv1.QuotaAdmission) bool) bool {
	kept := q.Status.Admitted[:0:0]
	for _, a := range q.Status.Admitted {
		if !gone(a) {
			kept = append(kept, a)
		}
	}
	dropped := len(kept) != len(q.Status.Admitted)
	q.Status.Admitted = kept
	Summarize(q)
	return dropped
}

// Summarize sets status.hard, used and summary from spec and admitted.
func Summarize(q *sandboxv1.SandboxQuota) {
	q.Status.Hard = *q.Spec.Hard.DeepCopy()
	u := usedBy(q, "")
	mem := u.Memory.DeepCopy()
	q.Status.Used = sandboxv1.QuotaAmounts{Sandboxes: &u.Sandboxes, PoolMembers: &u.PoolMembers, Memory: &mem}
	q.Status.Summary = summary(q.Status.Hard, u)
}

// recorded is the units q holds for r (-1: none).
func recorded(q *sandboxv1.SandboxQuota, r Request) int32 {
	i := indexOf(q, r.UID)
	if i < 0 {
		return -1
	}
	a := q.Status.Admitted[i]
	switch {
	case r.Unit.PoolMembers > 0:
		return a.PoolMembers / r.Unit.PoolMembers
	case r.Unit.Sandboxes > 0:
		return a.Sandboxes / r.Unit.Sandboxes
	}
	return 0
}

// allHold: every quota holds all of r.
func allHold(qs []sandboxv1.SandboxQuota, r Request) bool {
	for i := range qs {
		if !holds(&qs[i], r, r.Count) {
			return false
		}
	}
	return true
}

// holds says whether q records exactly k units of r (no entry for 0).
func holds(q *sandboxv1.SandboxQuota, r Request, k int32) bool {
	i := indexOf(q, r.UID)
	if i < 0 || k == 0 {
		return i < 0 && k == 0
	}
	a := q.Status.Admitted[i]
	mem := r.Unit.Memory.DeepCopy()
	mem.Mul(int64(k))
	return a.Sandboxes == r.Unit.Sandboxes*k && a.PoolMembers == r.Unit.PoolMembers*k &&
		a.Memory != nil && a.Memory.Cmp(mem) == 0
}

func indexOf(q *sandboxv1.SandboxQuota, uid types.UID) int {
	for i, a := range q.Status.Admitted {
		if a.UID == uid {
			return i
		}
	}
	return -1
}

// setEntry records k units of r in q (none when k is 0) and recomputes used.
func setEntry(q *sandboxv1.SandboxQuota, r Request, k int32) {
	Drop(q, func(a sandboxv1.QuotaAdmission) bool { return a.UID == r.UID })
	if k == 0 {
		return
	}
	mem := r.Unit.Memory.DeepCopy()
	mem.Mul(int64(k))
	q.Status.Admitted = append(q.Status.Admitted, sandboxv1.QuotaAdmission{
		UID: r.UID, Kind: r.Kind, Name: r.Name,
		Sandboxes: r.Unit.Sandboxes * k, PoolMembers: r.Unit.PoolMembers * k, Memory: &mem,
	})
	Summarize(q)
}

// usedBy sums q's entries but skip's.
func usedBy(q *sandboxv1.SandboxQuota, skip types.UID) Amounts {
	var u Amounts
	for _, a := range q.Status.Admitted {
		if a.UID == skip {
			continue
		}
		u.Sandboxes += a.Sandboxes
		u.PoolMembers += a.PoolMembers
		if a.Memory != nil {
			u.Memory.Add(*a.Memory)
		}
	}
	return u
}

// roomFor is how many units of r fit in q beside everything else it admitted.
func roomFor(q *sandboxv1.SandboxQuota, r Request) int32 {
	h, u := q.Spec.Hard, usedBy(q, r.UID)
	room := int64(r.Count)
	if h.Sandboxes != nil {
		room = min(room, fit(int64(*h.Sandboxes-u.Sandboxes), int64(r.Unit.Sandboxes)))
	}
	if h.PoolMembers != nil {
		room = min(room, fit(int64(*h.PoolMembers-u.PoolMembers), int64(r.Unit.PoolMembers)))
	}
	if h.Memory != nil {
		room = min(room, fit(h.Memory.Value()-u.Memory.Value(), r.Unit.Memory.Value()))
	}
	return int32(max(room, 0))
}

// fit is how many units of size fit in left (unbounded for a size of 0).
func fit(left, size int64) int64 {
	if size <= 0 {
		return math.MaxInt32
	}
	if left < 0 {
		return 0
	}
	return left / size
}

// exceeded says what of q all of r would pass: the quota, used, the need and hard.
func exceeded(q *sandboxv1.SandboxQuota, r Request) string {
	h, u := q.Spec.Hard, usedBy(q, r.UID)
	need := r.Unit
	need.Sandboxes, need.PoolMembers = need.Sandboxes*r.Count, need.PoolMembers*r.Count
	need.Memory = need.Memory.DeepCopy()
	need.Memory.Mul(int64(r.Count))
	var parts []string
	if h.Sandboxes != nil && u.Sandboxes+need.Sandboxes > *h.Sandboxes {
		parts = append(parts, fmt.Sprintf("sandboxes: used %d, requested %d, hard %d", u.Sandboxes, need.Sandboxes, *h.Sandboxes))
	}
	if h.PoolMembers != nil && u.PoolMembers+need.PoolMembers > *h.PoolMembers {
		parts = append(parts, fmt.Sprintf("poolMembers: used %d, requested %d, hard %d", u.PoolMembers, need.PoolMembers, *h.PoolMembers))
	}
	if h.Memory != nil {
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
