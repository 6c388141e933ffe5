package eventhub

import (
	"context"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// sub is one subscriber. Its fields are guarded by the hub's mu; its own
// goroutine (deliver) hands the queue over to out, so that the pump never
// waits for a consumer.
type sub struct {
	name   string
	buffer int
	count  *counts
	out    chan dd.Event
	notify chan struct{} // capacity 1: the queue grew

	// queue holds events and the Lost and Resync signals, which are always
	// accepted: thanks to fallBehind's merge at most two are pending beyond
	// the buffer.
	queue    []dd.Event
	events   int  // real events in queue, bounded by buffer
	inflight bool // one was taken from queue and is being handed over
	// behind: an EventLost is queued or delivered and no EventResync yet.
	behind bool
	// overflow: behind because the queue overflowed; events are dropped
	// until the subscriber has drained everything up to its EventLost.
	overflow bool
}

func newSub(name string, buffer int, c *counts) *sub {
	return &sub{name: name, buffer: buffer, count: c, out: make(chan dd.Event), notify: make(chan struct{}, 1)}
}

func (sb *sub) push(ev dd.Event) {
	sb.queue = append(sb.queue, ev)
	select {
	case sb.notify <- struct{}{}:
	default:
	}
}

// offer queues an event, or drops it when the subscriber is behind by overflow.
func (sb *sub) offer(ev dd.Event) {
	if !sb.overflow && sb.events < sb.buffer {
		sb.push(ev)
		sb.events++
		return
	}
	sb.count.dropped++
	if !sb.overflow {
		sb.overflow = true
		sb.count.overflows++
		// The queued events came before this one, so Lost goes after
		// them: the subscriber learns of the gap before any later event.
		sb.fallBehind()
	}
}

// fallBehind tells the subscriber that events may be missed from here on,
// once per outage, whether the driver's stream broke or its queue overflowed.
func (sb *sub) fallBehind() {
	if sb.behind {
		return
	}
	sb.behind = true
	if n := len(sb.queue); n > 0 && sb.queue[n-1].Type == dd.EventResync {
		// It has not seen that Resync: to it the earlier outage goes on.
		// This also keeps a flapping daemon from growing a stalled queue.
		sb.queue = sb.queue[:n-1]
		return
	}
	sb.push(lostEvent())
}

// maybeResync ends the subscriber's outage once the hub's stream is healthy
// and, after an overflow, once it has drained its backlog (so that a slow
// consumer is not flooded again at once).
func (sb *sub) maybeResync(driverLost bool) {
	if !sb.behind || driverLost {
		return
	}
	if sb.overflow && (len(sb.queue) > 0 || sb.inflight) {
		return
	}
	sb.behind, sb.overflow = false, false
	sb.push(dd.Event{Type: dd.EventResync, Time: time.Now()})
}

// deliver hands sb's queue over to its channel until the session ends or
// ctx does, then closes the channel.
func (h *Hub) deliver(ctx context.Context, s *session, sb *sub) {
	defer s.wg.Done()
	defer close(sb.out)
	defer h.unsubscribe(s, sb)
	handed := false
	for {
		ev, ok := h.next(s, sb, handed)
		handed = false
		if !ok {
			select {
			case <-sb.notify:
				continue
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			}
		}
		select {
		case sb.out <- ev:
			handed = true
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		}
	}
}

// next records that the previous event was handed over (handed) and takes
// the next one from the queue, if any.
func (h *Hub) next(s *session, sb *sub, handed bool) (dd.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if handed {
		sb.inflight = false
		sb.maybeResync(s.driverLost)
	}
	if len(sb.queue) == 0 {
		return dd.Event{}, false
	}
	ev := sb.queue[0]
	sb.queue[0] = dd.Event{} // let the labels go
	sb.queue = sb.queue[1:]
	if ev.Type != dd.EventLost && ev.Type != dd.EventResync {
		sb.events--
	}
	sb.inflight = true
	return ev, true
}

func (h *Hub) unsubscribe(s *session, sb *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(s.subs, sb)
}
