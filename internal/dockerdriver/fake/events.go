package fake

import (
	"context"
	"maps"
	"slices"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// sub is one Events stream. Emitters queue without blocking (the fake's
// lock is held); a goroutine per stream delivers.
type sub struct {
	filter dd.EventFilter
	queue  []dd.Event
	notify chan struct{} // capacity 1
}

// Events streams lifecycle events; see dd.Driver.Events.
func (f *Driver) Events(ctx context.Context, filter dd.EventFilter) <-chan dd.Event {
	_ = f.enter(context.WithoutCancel(ctx), VerbEvents)
	out := make(chan dd.Event)
	s := &sub{filter: filter, notify: make(chan struct{}, 1)}
	f.mu.Lock()
	f.subs[s] = true
	f.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			f.mu.Lock()
			delete(f.subs, s)
			f.mu.Unlock()
		}()
		for {
			f.mu.Lock()
			batch := s.queue
			s.queue = nil
			f.mu.Unlock()
			for _, e := range batch {
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-s.notify:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// emit queues an event for every matching stream. Callers hold f.mu.
func (f *Driver) emit(c *ctr, t dd.EventType, exitCode int) { f.deliver(newEvent(c, t, exitCode)) }

func newEvent(c *ctr, t dd.EventType, exitCode int) dd.Event {
	return dd.Event{
		Type:     t,
		ID:       c.c.ID,
		Name:     c.c.Name,
		Labels:   maps.Clone(c.c.Labels),
		ExitCode: exitCode,
		Time:     time.Now(),
	}
}

// deliver queues e for every stream whose filter it matches. Callers hold f.mu.
func (f *Driver) deliver(e dd.Event) {
	if f.eventsDropped {
		return
	}
	for s := range f.subs {
		if e.Type == dd.EventExecDie && !s.filter.ExecDie {
			continue
		}
		if hasLabels(e.Labels, s.filter.Labels) &&
			(len(s.filter.Names) == 0 || slices.Contains(s.filter.Names, e.Name) || slices.Contains(s.filter.Names, e.ID)) {
			s.push(e)
		}
	}
}

func (s *sub) push(e dd.Event) {
	s.queue = append(s.queue, e)
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// DropEvents breaks every event stream, as a daemon restart does: each
// stream gets an EventLost, and events from now on are lost until
// RestoreEvents.
func (f *Driver) DropEvents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.eventsDropped {
		return
	}
	f.eventsDropped = true
	for s := range f.subs {
		s.push(dd.Event{Type: dd.EventLost, Time: time.Now()})
	}
}

// RestoreEvents reconnects the streams: each gets an EventResync, then
// events flow again.
func (f *Driver) RestoreEvents() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.eventsDropped {
		return
	}
	f.eventsDropped = false
	for s := range f.subs {
		s.push(dd.Event{Type: dd.EventResync, Time: time.Now()})
	}
}
