package lanes_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// TestConcurrent: many objects acquire, run and release at once, some asking
// for two lanes, some giving up while they wait, beside steps held past the
// caps: never more than N granted on the host nor M in a namespace, and all
// run in the end with nothing left behind. Run it with -race.
func TestConcurrent(t *testing.T) {
	const perHost, perNamespace = 4, 2
	const namespaces, objects, rounds = 8, 6, 20
	wakeups := map[lanes.Owner]chan struct{}{}
	for i := range namespaces {
		for j := range objects {
			wakeups[own(name("ns", i), name("o", j))] = make(chan struct{}, 1)
		}
	}
	wake := func(o lanes.Owner) {
		select { // a controller's queue: one pending wake is enough
		case wakeups[o] <- struct{}{}:
		default:
		}
	}
	g := lanes.New(perHost, perNamespace, lanes.WithWake(wake))
	var host atomic.Int64
	ns := make([]atomic.Int64, namespaces)
	var ran atomic.Int64
	run := func(i int, o lanes.Owner, key string, n int) {
		h, m := host.Add(int64(n)), ns[i].Add(int64(n))
		if h > perHost || m > perNamespace {
			t.Errorf("%d granted on the host, %d in %s", h, m, o.Namespace)
		}
		runtime.Gosched()
		ns[i].Add(-int64(n))
		host.Add(-int64(n))
		g.Release(o, key)
		ran.Add(1)
	}
	var wg sync.WaitGroup
	for i := range namespaces {
		for j := range objects {
			o := own(name("ns", i), name("o", j))
			n := 1 + j%2
			wg.Go(func() {
				for r := range rounds {
					key := fmt.Sprint("seed-", r)
					if r%5 == 4 && !g.Acquire(o, key, n).Granted {
						g.Release(o, key) // cancelled while it waited
						continue
					}
					acquire(g, o, key, n, wakeups[o])
					run(i, o, key, n)
				}
			})
		}
	}
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { watchCaps(t, g, perNamespace, done) })
	wg.Go(func() { hold(g, rounds) })
	wg.Wait()
	close(done)
	watch.Wait()
	if ran.Load() < namespaces*objects*rounds*4/5 {
		t.Errorf("%d steps ran", ran.Load())
	}
	if s := g.Snapshot(); s.Busy != 0 || s.Waiting != 0 || len(s.Namespaces) != 0 {
		t.Errorf("left behind: %+v", s)
	}
}

// acquire asks until granted, on each wake or every few milliseconds (a
// reconciler's requeue).
func acquire(g *lanes.Gate, o lanes.Owner, key string, n int, woken chan struct{}) {
	for !g.Acquire(o, key, n).Granted {
		select {
		case <-woken:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// hold counts steps found running, past the caps, and ends them.
func hold(g *lanes.Gate, rounds int) {
	for r := range rounds {
		for j := range 3 {
			g.Hold(own("held", name("h", j)), fmt.Sprint(r), 1)
		}
		runtime.Gosched()
		for j := range 3 {
			g.Release(own("held", name("h", j)), fmt.Sprint(r))
		}
	}
}

// watchCaps checks the gate's own count of each namespace's lanes until done.
func watchCaps(t *testing.T, g *lanes.Gate, perNamespace int, done chan struct{}) {
	for {
		for ns, l := range g.Snapshot().Namespaces {
			if ns != "held" && l.Busy > perNamespace {
				t.Errorf("the gate counts %d lanes in %s", l.Busy, ns)
			}
		}
		select {
		case <-done:
			return
		default:
			runtime.Gosched()
		}
	}
}
