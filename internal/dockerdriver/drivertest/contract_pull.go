package drivertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of image pulls: present, shared, missing, timed out.

func (c contract) pullPresent(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	called := false
	if err := d.PullImage(ctx, env.Image(), func(dd.PullProgress) { called = true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Errorf("progress reported for an image already present")
	}
	ok, err := d.ImagePresent(ctx, env.Image())
	if err != nil || !ok {
		t.Errorf("ImagePresent(%s) = %v, %v; want true", env.Image(), ok, err)
	}
}

func (c contract) pullShared(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	reg := env.Registry(t)
	ref := reg.Push(t, "shared")
	if ok, err := d.ImagePresent(ctx, ref); err != nil || ok {
		t.Fatalf("ImagePresent(%s) before the pull = %v, %v; want false", ref, ok, err)
	}
	release := reg.Hold(t, ref)

	const callers = 3
	s := &sharedPull{d: d, ref: ref, attached: map[int]bool{}, last: map[int]dd.PullProgress{}}
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { errs[i] = s.pull(ctx, i) })
		if i == 0 {
			// The first caller's pull must reach the registry before the
			// others join, or they could all be "first".
			eventually(t, 15*time.Second, "first pull at the registry", func() (bool, string) {
				return reg.Pulls(ref) >= 1, fmt.Sprint(reg.Pulls(ref))
			})
		}
	}
	s.quitterLeaves(t, ctx, callers)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if n := reg.Pulls(ref); n != 1 {
		t.Errorf("registry served %d pulls of %s, want 1 shared pull", n, ref)
	}
	if want := callers; s.shared != want { // callers 1..n-1 and the quitter
		t.Errorf("%d callers were told they joined a shared pull, want %d", s.shared, want)
	}
	t.Logf("last progress of the first caller: %+v", s.last[0])
	if p := s.last[0]; p.Ref != ref || p.Layers == 0 || p.LayersDone != p.Layers {
		t.Errorf("last progress %+v: want all layers of %s done", p, ref)
	}
	if ok, err := d.ImagePresent(ctx, ref); err != nil || !ok {
		t.Errorf("ImagePresent after the pull = %v, %v; want true", ok, err)
	}
}

// sharedPull is what the callers of one pull were told, by caller.
type sharedPull struct {
	d        dd.Driver
	ref      string
	mu       sync.Mutex
	attached map[int]bool
	last     map[int]dd.PullProgress
	shared   int // callers told, on their first progress, that they joined a pull
}

func (s *sharedPull) pull(ctx context.Context, i int) error {
	return s.d.PullImage(ctx, s.ref, func(p dd.PullProgress) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.attached[i] && p.Shared {
			s.shared++
		}
		s.attached[i] = true
		s.last[i] = p
	})
}

// quitterLeaves: a caller that gives up must not take the pull down with it.
func (s *sharedPull) quitterLeaves(t *testing.T, ctx context.Context, callers int) {
	quitter, quit := context.WithCancel(ctx)
	quitErr := make(chan error, 1)
	go func() { quitErr <- s.pull(quitter, callers) }()
	eventually(t, 15*time.Second, "all callers attached", func() (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.attached) == callers+1, fmt.Sprint(s.attached)
	})
	quit()
	select {
	case err := <-quitErr:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), s.ref) {
			t.Errorf("cancelled caller got %v, want context.Canceled naming %s", err, s.ref)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("cancelled caller still waiting")
	}
}

func (c contract) pullMissing(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	ref := env.Registry(t).MissingTag(t, "missing")
	err := d.PullImage(ctx, ref, nil)
	t.Logf("pull of a missing tag: %v", err)
	wantKind(t, err, dd.ErrPullFailed, dd.ErrNotFound)
	if err != nil && (!strings.Contains(err.Error(), "manifest unknown") || !strings.HasPrefix(err.Error(), "pull "+ref+": ")) {
		t.Errorf("error %q: want %q and the registry's message (manifest unknown)", err, "pull "+ref+": ")
	}
}

func (c contract) pullTimeout(t *testing.T) {
	d, env, ctx := c.setup(t, Config{PullTimeout: time.Second})
	reg := env.Registry(t)
	ref := reg.Push(t, "slow")
	reg.Hold(t, ref)
	err := d.PullImage(ctx, ref, nil)
	wantKind(t, err, dd.ErrPullFailed, dd.ErrTimeout)
	if want := "pull " + ref + ": timeout after 1s: context deadline exceeded"; err != nil && err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
