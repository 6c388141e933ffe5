package lanes

import "sync"

// Fleet is the gates of a fleet of Docker hosts, by host name, all with the
// same caps and options (one wake hook for all: an owner is on one host).
type Fleet struct {
	mu                    sync.Mutex
	perHost, perNamespace int
	opts                  []Option
	gates                 map[string]*Gate
}

// NewFleet is a fleet whose gates New makes with these arguments.
func NewFleet(perHost, perNamespace int, opts ...Option) *Fleet {
	return &Fleet{perHost: perHost, perNamespace: perNamespace, opts: opts, gates: map[string]*Gate{}}
}

// Host is host's gate, made on first use.
func (f *Fleet) Host(host string) *Gate {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gates[host]
	if g == nil {
		g = New(f.perHost, f.perNamespace, f.opts...)
		f.gates[host] = g
	}
	return g
}

// ReleaseOwner releases owner's steps on every host (its object is deleted,
// wherever it was bound).
func (f *Fleet) ReleaseOwner(owner Owner) {
	f.mu.Lock()
	gates := make([]*Gate, 0, len(f.gates))
	for _, g := range f.gates {
		gates = append(gates, g)
	}
	f.mu.Unlock()
	for _, g := range gates {
		g.ReleaseOwner(owner)
	}
}
