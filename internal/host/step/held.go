package step

import (
	"context"
	"slices"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// launchers hold, per container, a runner started ahead for the next step of
// a command (Hold): a container that ran one data operation runs another, and
// a held runner skips the ~100 ms an exec start costs. One shell each; those
// whose container went (their shell with it) are dropped at the next Hold.
type launchers struct {
	mu   sync.Mutex
	held map[string]heldLauncher
}

type heldLauncher struct {
	cmd []string
	p   dd.PreparedExec
}

// Hold prepares, in container, the launch of the next step with s's command
// (its environment, its key's directory among it, comes at Start), replacing
// any held there before. It is bounded by its own deadline: call it beside the
// caller's work (go r.Hold(...)).
func (r *Runner) Hold(container string, s Step) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := r.driver.PrepareExec(ctx, container, dd.ExecSpec{Cmd: launchCmd(s), OutputLimit: 8 << 10, HoldsItself: true})
	if err != nil {
		return // the next step prepares its own, as the first did
	}
	l := &r.held
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]heldLauncher{}
	}
	for id, h := range l.held {
		if id == container || !h.p.Held() {
			h.p.Close()
			delete(l.held, id)
		}
	}
	l.held[container] = heldLauncher{cmd: launchCmd(s), p: p}
}

// take hands out the launcher held in container, when it is for cmd.
func (l *launchers) take(container string, cmd []string) dd.PreparedExec {
	l.mu.Lock()
	h, ok := l.held[container]
	delete(l.held, container)
	l.mu.Unlock()
	if !ok {
		return nil
	}
	if !slices.Equal(h.cmd, cmd) || !h.p.Held() {
		h.p.Close()
		return nil
	}
	return h.p
}
