package step

import (
	"sync"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// lateStates keep, per container and key, what this Runner knows of a step
// it launched that outran the launch's inline wait: that its state was not
// read yet (its runner may not have claimed its directory), or the state its
// runner printed as it ended (dd.PreparedExec.Launch's late), so that the pass
// its end wakes reads it with no state exec (Observe). An entry goes when it
// is read, or when its step is forgotten or cancelled.
type lateStates struct {
	mu sync.Mutex
	m  map[string]map[Key]lateState
}

type lateState struct {
	st    State
	ended bool // st is its end; else its state was not read yet
}

// lateLimit bounds the entries kept: one whose pass never came (its container
// removed meanwhile) would otherwise stay. Past it they all go; a step whose
// entry went is read by an exec (without waiting for its directory).
const lateLimit = 1024

// launched notes that key's runner in container runs on, its state unread,
// unless its end came already.
func (l *lateStates) launched(container string, key Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[container][key]; !ok || !e.ended {
		l.put(container, key, lateState{})
	}
}

// record is the launch's late func for key in container: a runner's end,
// parsed as Start parses an inline one. Any other exit (a runner that found
// its key taken) records nothing.
func (l *lateStates) record(container string, key Key) func(dd.ExecResult) {
	return func(res dd.ExecResult) {
		if res.ExitCode != RunnerExit {
			return
		}
		st, err := parse(res.Stdout)
		if err != nil {
			return
		}
		st.Key = key
		l.mu.Lock()
		defer l.mu.Unlock()
		l.put(container, key, lateState{st: st, ended: true})
	}
}

func (l *lateStates) put(container string, key Key, e lateState) {
	n := 0
	for _, ks := range l.m {
		n += len(ks)
	}
	if l.m == nil || n >= lateLimit {
		l.m = map[string]map[Key]lateState{}
	}
	if l.m[container] == nil {
		l.m[container] = map[Key]lateState{}
	}
	l.m[container][key] = e
}

// take hands out, and forgets, what is known of key in container: its end
// (ended), or that its state was not read yet (unread).
func (l *lateStates) take(container string, key Key) (st State, ended, unread bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[container][key]
	if !ok {
		return State{}, false, false
	}
	delete(l.m[container], key)
	if len(l.m[container]) == 0 {
		delete(l.m, container)
	}
	return e.st, e.ended, !e.ended
}

// supersede forgets what is known of the other steps of key's ID in
// container: a step that supersedes them removes the ended ones from the
// container (and cancels those running), so their state is the container's.
func (l *lateStates) supersede(container string, key Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m[container] {
		if k != key && k.id() == key.id() {
			delete(l.m[container], k)
		}
	}
}
