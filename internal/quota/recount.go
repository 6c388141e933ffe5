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

// Recount sets q's used from objects (every Sandbox and pool of its namespace
// the caller sees) and drops the admissions in flight that are done: recorded
// by their object's status, or whose object is gone (gone confirms an absence
// the caller's list may only lag with). Each object counts once: at its entry
// in flight while it has one, else at its record. It says whether q changed.
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
	kept := q.Status.Admitted[:0:0]
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
	return !equality.Semantic.DeepEqual(before, &q.Status), nil
}
