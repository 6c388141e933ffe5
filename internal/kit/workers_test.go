package kit

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const testStuckAfter = 3 * time.Minute

// testClock is a clock the test moves: the threshold is judged by it, never by
// how fast a loaded machine runs.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// watchedQueue is a Workers on a test clock watching one controller's queue.
func watchedQueue(t *testing.T, name string) (*Workers, *queue, *testClock) {
	t.Helper()
	clock := &testClock{t: time.Now()}
	w := newWorkers(testStuckAfter, logr.Discard())
	w.now = clock.now
	q := w.watch(name, priorityqueue.New[reconcile.Request](name))
	t.Cleanup(func() {
		if !q.ShuttingDown() {
			q.ShutDown()
		}
	})
	return w, q, clock
}

func req(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// take is a worker taking the next item, which must be want.
func take(t *testing.T, q *queue, want string) {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() { item, _ := q.Get(); got <- item }()
	select {
	case item := <-got:
		if item != req(want) {
			t.Fatalf("took %s, want %s", item, req(want))
		}
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute to take %s", want)
	}
}

// live is the check's answer: nil, or its error's text.
func live(w *Workers) string {
	if err := w.Check(httptest.NewRequest("GET", "/healthz", nil)); err != nil {
		return err.Error()
	}
	return ""
}

func TestStuckWhenItemsWaitAndNoWorkerTakesOne(t *testing.T) {
	w, q, clock := watchedQueue(t, "sandbox")
	q.Add(req("a"))
	take(t, q, "a") // the only worker, in a long pass
	q.Add(req("b"))
	clock.advance(testStuckAfter)
	if got := live(w); got != "" {
		t.Fatalf("at the threshold, not past it: %s", got)
	}
	clock.advance(time.Second)
	got := live(w)
	for _, want := range []string{"controller sandbox", "1 waiting", "no worker took one for 3m1s", "the longest (ns/a) for 3m1s"} {
		if !strings.Contains(got, want) {
			t.Errorf("stuck: %q, want it to say %q", got, want)
		}
	}

	q.Done(req("a"))
	q.Add(req("c"))
	take(t, q, "b")
	if got := live(w); got != "" {
		t.Fatalf("a worker took an item: %s", got)
	}
	clock.advance(testStuckAfter + time.Second)
	if got := live(w); !strings.Contains(got, "controller sandbox") {
		t.Errorf("c waits past the threshold after the take: %q", got)
	}
}

func TestALongPassWithNothingWaitingIsLive(t *testing.T) {
	w, q, clock := watchedQueue(t, "sandbox")
	q.Add(req("a"))
	take(t, q, "a")
	clock.advance(time.Hour)
	if got := live(w); got != "" {
		t.Errorf("one long pass, the queue empty: %s", got)
	}
	q.Add(req("a")) // its own key again: no worker may take it before Done
	if got := live(w); got != "" {
		t.Errorf("one long pass whose own item was added again: %s", got)
	}
}

func TestALongPassWhileOtherWorkersTakeItemsIsLive(t *testing.T) {
	w, q, clock := watchedQueue(t, "sandbox")
	q.Add(req("held"))
	take(t, q, "held") // one worker held for the whole test
	for _, name := range []string{"b", "c", "d", "e"} {
		q.Add(req(name))
		q.Add(req("next-" + name))
		take(t, q, name) // the other worker takes work
		clock.advance(testStuckAfter / 2)
		if got := live(w); got != "" {
			t.Fatalf("items taken every %s beside one long pass: %s", testStuckAfter/2, got)
		}
		q.Done(req(name))
		take(t, q, "next-"+name)
		q.Done(req("next-" + name))
	}

	// The other worker waits in Get for an item: the controller takes work.
	took := make(chan struct{})
	go func() { _, _ = q.Get(); close(took) }()
	waitFor(t, func() bool { q.mu.Lock(); defer q.mu.Unlock(); return q.idle == 1 }, "a worker waiting in Get")
	clock.advance(time.Hour)
	if got := live(w); got != "" {
		t.Errorf("a worker waits for work beside a long pass: %s", got)
	}
	q.Add(req("f"))
	within(t, took, "the waiting worker to take f")
}

// An item ready after a long quiet time is taken by the worker waiting in Get:
// the moment between is not judged stuck, however long the quiet was.
func TestAWorkerWaitingInGetIsLive(t *testing.T) {
	w, q, clock := watchedQueue(t, "sandbox")
	q.Add(req("a"))
	take(t, q, "a")
	q.Done(req("a"))
	clock.advance(time.Hour)
	q.mu.Lock()
	q.idle++ // a worker has entered Get (GetWithPriority), b not yet handed to it
	q.mu.Unlock()
	q.Add(req("b"))
	if got := live(w); got != "" {
		t.Errorf("a worker waits in Get as b arrives: %s", got)
	}
}

func TestWorkersNotStartedOrStoppedAreNotJudged(t *testing.T) {
	w, q, clock := watchedQueue(t, "sandboxpool")
	q.Add(req("a")) // queued while the caches sync, or on a replica not elected
	clock.advance(time.Hour)
	if got := live(w); got != "" {
		t.Errorf("workers not started: %s", got)
	}
	take(t, q, "a")
	q.Add(req("b"))
	q.ShutDown()
	clock.advance(time.Hour)
	if got := live(w); got != "" {
		t.Errorf("a controller stopped: %s", got)
	}
}

// waitFor waits until cond holds, with a deadline that holds on a loaded machine.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// within waits for ch to close, with a deadline that holds on a loaded machine.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}
