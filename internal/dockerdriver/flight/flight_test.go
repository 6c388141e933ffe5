package flight

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stepper is a run the test drives: each value sent on steps is published,
// and ack says the publish (delivery included) is over.
type stepper struct {
	steps chan int
	ack   chan struct{}
	err   error
	runs  atomic.Int32
}

func newStepper(err error) *stepper {
	return &stepper{steps: make(chan int), ack: make(chan struct{}), err: err}
}

func (s *stepper) run(publish func(int)) error {
	s.runs.Add(1)
	for v := range s.steps {
		publish(v)
		s.ack <- struct{}{}
	}
	return s.err
}

func (s *stepper) publish(v int) { s.steps <- v; <-s.ack }

// recorder collects what a subscriber was given.
type recorder struct {
	mu  sync.Mutex
	got []int
}

func (r *recorder) fn(v int) { r.mu.Lock(); r.got = append(r.got, v); r.mu.Unlock() }

func (r *recorder) values() []int { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.got) }

func wait(t *testing.T, f *Flight[int]) {
	t.Helper()
	select {
	case <-f.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("flight not done")
	}
}

func TestJoinSharesOneRun(t *testing.T) {
	var g Group[int]
	s := newStepper(errors.New("boom"))
	const callers = 8
	flights := make([]*Flight[int], callers)
	var starts atomic.Int32
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			f, started := g.Join("k", 0, s.run)
			if started {
				starts.Add(1)
			}
			flights[i] = f
		})
	}
	wg.Wait()
	if n := starts.Load(); n != 1 {
		t.Errorf("%d callers started a flight, want 1", n)
	}
	for i, f := range flights {
		if f != flights[0] {
			t.Errorf("caller %d got another flight", i)
		}
	}
	if f, ok := g.Lookup("k"); !ok || f != flights[0] {
		t.Errorf("Lookup during the run = %p, %v; want the flight", f, ok)
	}
	if _, ok := g.Lookup("other"); ok {
		t.Errorf("Lookup of an unknown key found a flight")
	}
	close(s.steps)
	wait(t, flights[0])
	if err := flights[0].Err(); err == nil || err.Error() != "boom" {
		t.Errorf("Err = %v, want boom", err)
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("run ran %d times, want 1", n)
	}
}

func TestAttachLatestThenEveryPublish(t *testing.T) {
	var g Group[int]
	s := newStepper(nil)
	f, _ := g.Join("k", -1, s.run)
	var a, b recorder
	detachA := f.Attach(a.fn)
	s.publish(1)
	s.publish(2)
	if v := f.Last(); v != 2 {
		t.Errorf("Last = %d, want 2", v)
	}
	detachB := f.Attach(b.fn)
	defer detachB()
	s.publish(3)
	detachA()
	detachA() // idempotent
	s.publish(4)
	close(s.steps)
	wait(t, f)
	if got, want := a.values(), []int{-1, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("first subscriber got %v, want %v (initial, then each publish until detach)", got, want)
	}
	if got, want := b.values(), []int{2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("late subscriber got %v, want %v (latest snapshot at once)", got, want)
	}
	var c recorder
	f.Attach(c.fn)()
	if got := c.values(); !slices.Equal(got, []int{4}) {
		t.Errorf("attach after the end got %v, want [4]", got)
	}
}

func TestKeyFreeAfterRun(t *testing.T) {
	var g Group[int]
	first, _ := g.Join("k", 0, func(func(int)) error { return nil })
	wait(t, first)
	// Forgotten before Done closed: no waiting needed.
	if _, ok := g.Lookup("k"); ok {
		t.Errorf("Lookup after Done found the old flight")
	}
	s := newStepper(nil)
	second, started := g.Join("k", 0, s.run)
	if !started || second == first {
		t.Errorf("Join after the run: started=%v, same flight=%v; want a new flight", started, second == first)
	}
	close(s.steps)
	wait(t, second)
}

func TestOnDone(t *testing.T) {
	var g Group[int]
	s := newStepper(errors.New("boom"))
	f, _ := g.Join("k", 0, s.run)
	before := make(chan error, 1)
	f.OnDone(func(err error) {
		select {
		case <-f.Done():
		default:
			t.Errorf("OnDone called before Done closed")
		}
		before <- err
	})
	close(s.steps)
	if err := <-before; err == nil || err.Error() != "boom" {
		t.Errorf("OnDone got %v, want boom", err)
	}
	called := false
	f.OnDone(func(err error) { called = err != nil })
	if !called {
		t.Errorf("OnDone on a finished flight did not call fn before returning")
	}
}

// TestConcurrentUse is for -race: joins, attaches, detaches and lookups
// while runs publish and end.
func TestConcurrentUse(t *testing.T) {
	var g Group[int]
	run := func(publish func(int)) error {
		for i := range 50 {
			publish(i)
		}
		return nil
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				f, _ := g.Join("k", 0, run)
				var last int // unsynchronized on purpose: detach must order it
				detach := f.Attach(func(v int) { last = v })
				g.Lookup("k")
				_ = f.Last()
				detach()
				_ = last
				f.OnDone(func(error) {})
			}
		})
	}
	wg.Wait()
}
