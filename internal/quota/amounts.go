package quota

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Amounts is what an object (or one unit of it) takes.
type Amounts struct {
	Sandboxes   int32
	PoolMembers int32
	Memory      resource.Quantity
}

// Times is k units of a.
func (a Amounts) Times(k int32) Amounts {
	mem := a.Memory.DeepCopy()
	mem.Mul(int64(k))
	return Amounts{Sandboxes: a.Sandboxes * k, PoolMembers: a.PoolMembers * k, Memory: mem}
}

func (a *Amounts) Add(o Amounts) {
	a.Sandboxes += o.Sandboxes
	a.PoolMembers += o.PoolMembers
	a.Memory.Add(o.Memory)
}

func (a *Amounts) Sub(o Amounts) {
	a.Sandboxes -= o.Sandboxes
	a.PoolMembers -= o.PoolMembers
	a.Memory.Sub(o.Memory)
}

func (a Amounts) Equal(o Amounts) bool {
	return a.Sandboxes == o.Sandboxes && a.PoolMembers == o.PoolMembers && a.Memory.Cmp(o.Memory) == 0
}

func (a Amounts) IsZero() bool { return a.Equal(Amounts{}) }

// Covers: a takes at least as much as o of everything.
func (a Amounts) Covers(o Amounts) bool {
	return a.Sandboxes >= o.Sandboxes && a.PoolMembers >= o.PoolMembers && a.Memory.Cmp(o.Memory) >= 0
}

// Max is the most of a and o, field by field.
func (a Amounts) Max(o Amounts) Amounts {
	mem := a.Memory.DeepCopy()
	if o.Memory.Cmp(mem) > 0 {
		mem = o.Memory.DeepCopy()
	}
	return Amounts{Sandboxes: max(a.Sandboxes, o.Sandboxes), PoolMembers: max(a.PoolMembers, o.PoolMembers), Memory: mem}
}

// Admitted is a as an object's status.admitted.
func (a Amounts) Admitted() *sandboxv1.Admitted {
	return &sandboxv1.Admitted{Sandboxes: a.Sandboxes, PoolMembers: a.PoolMembers, Memory: bytes(a.Memory)}
}

// Entry is a as an admission in flight of the object uid.
func (a Amounts) Entry(uid types.UID, kind, name string) sandboxv1.QuotaAdmission {
	return sandboxv1.QuotaAdmission{UID: uid, Kind: kind, Name: name,
		Sandboxes: a.Sandboxes, PoolMembers: a.PoolMembers, Memory: bytes(a.Memory)}
}

// Used is a as a quota's status.used.
func (a Amounts) Used() sandboxv1.QuotaAmounts {
	s, p := a.Sandboxes, a.PoolMembers
	return sandboxv1.QuotaAmounts{Sandboxes: &s, PoolMembers: &p, Memory: bytes(a.Memory)}
}

// FromAdmitted reads an object's status.admitted (nil: none recorded).
func FromAdmitted(a *sandboxv1.Admitted) *Amounts {
	if a == nil {
		return nil
	}
	out := Amounts{Sandboxes: a.Sandboxes, PoolMembers: a.PoolMembers}
	if a.Memory != nil {
		out.Memory = a.Memory.DeepCopy()
	}
	return &out
}

// FromEntry reads an admission in flight.
func FromEntry(e sandboxv1.QuotaAdmission) Amounts {
	return *FromAdmitted(&sandboxv1.Admitted{Sandboxes: e.Sandboxes, PoolMembers: e.PoolMembers, Memory: e.Memory})
}

// FromUsed reads a quota's status.used.
func FromUsed(u sandboxv1.QuotaAmounts) Amounts {
	var out Amounts
	if u.Sandboxes != nil {
		out.Sandboxes = *u.Sandboxes
	}
	if u.PoolMembers != nil {
		out.PoolMembers = *u.PoolMembers
	}
	if u.Memory != nil {
		out.Memory = u.Memory.DeepCopy()
	}
	return out
}

// bytes is q as a byte count in binary units, so that sums print alike.
func bytes(q resource.Quantity) *resource.Quantity {
	return resource.NewQuantity(q.Value(), resource.BinarySI)
}
