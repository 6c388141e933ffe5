package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// notified collects the waiters a finished pull tells.
type notified struct {
	mu  sync.Mutex
	got map[string]int
	ch  chan string
}

func newNotified() *notified { return &notified{got: map[string]int{}, ch: make(chan string, 16)} }

func (n *notified) notify(w string) {
	n.mu.Lock()
	n.got[w]++
	n.mu.Unlock()
	n.ch <- w
}

func (n *notified) wait(t *testing.T) string {
	t.Helper()
	select {
	case w := <-n.ch:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter was told the pull ended")
		return ""
	}
}

// Callers waiting for one image share one pull, never wait for it, and are each
// told once when it ends.
func TestPullsShareOnePullAndTellEveryWaiter(t *testing.T) {
	f := fake.New()
	const ref = "postgres:16-alpine"
	f.AddRegistryImage(ref, fake.Image{Layers: 3})
	release := f.HoldPull(ref)
	n := newNotified()
	p := host.NewPulls(f, n.notify, nil)
	ctx := context.Background()

	for _, w := range []string{"ns/a", "ns/b", "ns/a"} {
		if st := p.Ensure(ctx, ref, w); st.Present || st.Err != nil {
			t.Fatalf("Ensure for %s while the pull is held = %+v, want pulling", w, st)
		}
	}
	release()
	got := map[string]bool{n.wait(t): true, n.wait(t): true}
	if !got["ns/a"] || !got["ns/b"] {
		t.Errorf("told %v, want ns/a and ns/b", got)
	}
	if st := p.Ensure(ctx, ref, "ns/c"); !st.Present {
		t.Errorf("after the pull Ensure = %+v, want present", st)
	}
	if n := f.RegistryPulls(ref); n != 1 {
		t.Errorf("%d pulls reached the registry, want 1", n)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.got["ns/a"] != 1 {
		t.Errorf("ns/a was told %d times, want once", n.got["ns/a"])
	}
}

// A failed pull is not retried before its backoff, and says when it will be.
func TestPullsBackOffAfterAFailure(t *testing.T) {
	f := fake.New()
	const ref = "missing:1"
	n := newNotified()
	p := host.NewPulls(f, n.notify, nil)
	ctx := context.Background()

	p.Ensure(ctx, ref, "ns/a")
	n.wait(t)
	st := p.Ensure(ctx, ref, "ns/a")
	if !errors.Is(st.Err, dd.ErrPullFailed) || st.RetryIn <= 0 || st.RetryIn > host.Delay(host.PullBackoff, 0) {
		t.Fatalf("after a failed pull Ensure = %+v, want the failure and a retry within the first backoff", st)
	}
	if n := f.RegistryPulls(ref); n != 1 {
		t.Errorf("%d pulls during the backoff, want 1", n)
	}
}

func TestDelayDoublesUpToTheCap(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 2 * time.Second, 1: 4 * time.Second, 5: 64 * time.Second, 6: 2 * time.Minute, 40: 2 * time.Minute} {
		if got := host.Delay(host.RestartBackoff, n); got != want {
			t.Errorf("restart delay after %d = %s, want %s", n, got, want)
		}
	}
	if got := host.Delay(host.PullBackoff, 2); got != 20*time.Second {
		t.Errorf("pull delay after 2 = %s, want 20s", got)
	}
}
