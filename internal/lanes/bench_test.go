package lanes_test

import (
	"fmt"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// queued is a gate at the default caps with its lanes taken and 1,000
// waiters in 50 namespaces (20 each), and the owners that run.
type queued struct {
	g       *lanes.Gate
	w       *wakes
	running []lanes.Owner
	next    int
}

func newQueued(b *testing.B) *queued {
	q := &queued{w: &wakes{}}
	q.g = lanes.New(lanes.DefaultPerHost, lanes.DefaultPerNamespace, lanes.WithWake(q.w.wake))
	for range 1000 + lanes.DefaultPerHost {
		q.arrive()
	}
	if s := q.g.Snapshot(); s.Waiting != 1000 || len(s.Namespaces) != 50 {
		b.Fatalf("set up %+v", s)
	}
	return q
}

// arrive is a new object's first pass, in the next of 50 namespaces.
func (q *queued) arrive() {
	o := own(name("ns", q.next%50), fmt.Sprint(q.next))
	q.next++
	q.ask(o)
}

func (q *queued) ask(o lanes.Owner) {
	if q.g.Acquire(o, "seed", 1).Granted {
		q.running = append(q.running, o)
	}
}

// BenchmarkAcquireRelease: one op is a step's end (Release), the pass its
// wake brings (Acquire, granted) and a new object's first Acquire, with 1,000
// waiting in 50 namespaces throughout.
func BenchmarkAcquireRelease(b *testing.B) {
	q := newQueued(b)
	b.ReportAllocs()
	for b.Loop() {
		o := q.running[0]
		q.running = q.running[1:]
		q.g.Release(o, "seed")
		for _, woken := range q.w.take() {
			q.ask(woken)
		}
		q.arrive()
	}
	if s := q.g.Snapshot(); s.Waiting != 1000 || s.Busy != lanes.DefaultPerHost {
		b.Fatalf("ended with %+v", s)
	}
}

// BenchmarkAcquireWaiting: one op is a waiting object's pass asking again,
// the last of its namespace's 20, with 1,000 waiting in 50 namespaces.
func BenchmarkAcquireWaiting(b *testing.B) {
	q := newQueued(b)
	last := own(name("ns", (q.next-1)%50), fmt.Sprint(q.next-1))
	b.ReportAllocs()
	for b.Loop() {
		if tk := q.g.Acquire(last, "seed", 1); tk.Granted || tk.Position != 20 {
			b.Fatalf("got %+v", tk)
		}
	}
}
