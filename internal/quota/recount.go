package quota

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Object is a Sandbox or pool of a quota's namespace, at what its status
// records (Recorded*: nil when it holds nothing).
type Object struct {
	UID      types.UID
	Recorded *Amounts
}

// doneEntriesKept is how many done entries (recorded by their objects) a
// recount leaves in place when nothing else of the quota changes: dropping
// each as its object records it would cost a quota write per admission (on a
// claim's path, and racing the next admissions' writes); leaving up to this
// many bounds the quota's size whatever the number of its objects.
const doneEntriesKept = 32

// Recount sets q's used from objects (every Sandbox and pool of its namespace
// the caller sees) and drops the admissions in flight that are done: recorded
// by their object's status, or whose object is gone (gone confirms an absence
// the caller's list may only lag with). Each object counts once: at its entry
// in flight while it has one, else at its record. It says whether q changed;
// when only up to doneEntriesKept recorded entries would go, q is left as it is.
//
// No over-admission: an entry is only dropped once the object's status, as
// listed, records at least as much; q is written with the resourceVersion it
// was read with, so an admission written meanwhile makes the write a conflict.
func Recount(q *sandboxv1.SandboxQuota, objects []Object, gone func(sandboxv1.QuotaAdmission) (bool, error)) (bool, error) {
	before := q.Status.DeepCopy()
	listed := make(map[types.UID]*Amounts, len(objects))
	for _, o := range objects {
		listed[o.UID] = o.Recorded
	}
	var used Amounts
	kept, recorded := q.Status.Admitted[:0:0], 0
	for _, e := range q.Status.Admitted {
		rec, ok := listed[e.UID]
		if !ok {
			if isGone, err := gone(e); err != nil {
				return false, err
			} else if isGone {
				continue
			}
		}
		if rec != nil && rec.Covers(FromEntry(e)) {
			recorded++
			continue
		}
		kept = append(kept, e)
		used.Add(FromEntry(e))
		delete(listed, e.UID)
	}
	for _, rec := range listed {
		if rec != nil {
			used.Add(*rec)
		}
	}
	q.Status.Admitted = kept
	setUsed(q, used)
	q.Status.ObservedGeneration = q.Generation
	if recorded <= doneEntriesKept && len(kept)+recorded == len(before.Admitted) && sameFigures(before, &q.Status) {
		before.DeepCopyInto(&q.Status)
		return false, nil
	}
	return !equality.Semantic.DeepEqual(before, &q.Status), nil
}

// sameFigures: a and b say the same of the quota but for its entries.
func sameFigures(a, b *sandboxv1.SandboxQuotaStatus) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	a.Admitted, b.Admitted = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}
