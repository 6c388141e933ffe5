// Package flight shares one run of a keyed job among concurrent callers
// (single-flight) and fans its progress out to every caller attached to it.
package flight

import (
	"sync"
)

// Group runs at most one call per key at a time; callers of a key in flight join it.
// The zero value is ready to use.
type Group[P any] struct {
	mu      sync.Mutex
	flights map[string]*Flight[P]
}

// Join returns the flight for key, starting run in a new goroutine when none is
// in flight (started=true). run gets publish, to report progress to every
// attached subscriber. The key is forgotten when run returns, before Done is
// closed, so a Join after that starts a new flight.
func (g *Group[P]) Join(key string, initial P, run func(publish func(P)) error) (f *Flight[P], started bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.flights[key]; ok {
		return f, false
	}
	if g.flights == nil {
		g.flights = map[string]*Flight[P]{}
	}
	f = newFlight(initial)
	g.flights[key] = f
	go g.run(key, f, run)
	return f, true
}

// Lookup returns the flight in progress for key, if any.
func (g *Group[P]) Lookup(key string) (*Flight[P], bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.flights[key]
	return f, ok
}

func (g *Group[P]) run(key string, f *Flight[P], run func(publish func(P)) error) {
	err := run(f.publish)
	// Forget the key first: whoever sees Done closed may start afresh.
	g.mu.Lock()
	delete(g.flights, key)
	g.mu.Unlock()
	f.finish(err)
}
