package fakedocker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
)

// historyLimit is how many events the daemon keeps for streams that ask to
// replay from an earlier time (Docker keeps a bounded history too).
const historyLimit = 4096

// eventHub is the daemon's event history and its streams. Guarded by Server.mu.
type eventHub struct {
	history []events.Message
	subs    map[*eventSub]bool
	last    int64 // the latest event's time: events' times strictly increase
}

// eventSub is one event stream: emitters queue without blocking, its handler
// writes.
type eventSub struct {
	f      filters
	queue  []events.Message
	notify chan struct{} // capacity 1
}

// emit records a lifecycle event of c, its labels and Docker's own attributes
// among them, and queues it for the streams it matches. Callers hold s.mu.
func (s *Server) emit(c *ctr, action string, extra map[string]string) {
	attrs := maps.Clone(c.config.Labels)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["name"], attrs["image"] = c.name, c.config.Image
	maps.Copy(attrs, extra)
	h := &s.events
	now := max(time.Now().UnixNano(), h.last+1)
	h.last = now
	m := events.Message{Type: events.ContainerEventType, Action: events.Action(action), Scope: "local",
		Actor: events.Actor{ID: c.id, Attributes: attrs}, Time: now / 1e9, TimeNano: now}
	if len(h.history) == historyLimit {
		h.history = append(h.history[:0], h.history[1:]...)
	}
	h.history = append(h.history, m)
	for sub := range h.subs {
		if sub.match(m) {
			sub.push(m)
		}
	}
}

func (sub *eventSub) match(m events.Message) bool {
	return sub.f.anyOf("type", string(m.Type)) && sub.f.anyOf("event", string(m.Action)) &&
		sub.f.anyOf("container", m.Actor.ID, m.Actor.Attributes["name"]) && sub.f.labelsMatch(m.Actor.Attributes)
}

func (sub *eventSub) push(m events.Message) {
	sub.queue = append(sub.queue, m)
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// eventStream streams events as JSON lines until the client goes: first those
// of the history since the time asked, then new ones.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilters(r, "type", "event", "label", "container")
	if err == nil && r.URL.Query().Has("until") {
		err = fmt.Errorf("the fake does not serve until")
	}
	since, replay, serr := parseSince(r.URL.Query().Get("since"))
	if err = errors.Join(err, serr); err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	sub := &eventSub{f: f, notify: make(chan struct{}, 1)}
	s.mu.Lock()
	for _, m := range s.events.history {
		if replay && m.TimeNano >= since && sub.match(m) {
			sub.queue = append(sub.queue, m)
		}
	}
	s.events.subs[sub] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.events.subs, sub)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	s.deliver(w, r, sub)
}

// deliver writes sub's events as they come, until the client goes.
func (s *Server) deliver(w http.ResponseWriter, r *http.Request, sub *eventSub) {
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	for {
		s.mu.Lock()
		batch := sub.queue
		sub.queue = nil
		s.mu.Unlock()
		for _, m := range batch {
			if enc.Encode(m) != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-sub.notify:
		case <-r.Context().Done():
			return
		}
	}
}

// parseSince reads "seconds.nanoseconds" (how the client sends a time); replay
// is false when there is none.
func parseSince(v string) (nanos int64, replay bool, err error) {
	if v == "" {
		return 0, false, nil
	}
	secs, frac, _ := strings.Cut(v, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || len(frac) > 9 {
		return 0, false, fmt.Errorf("invalid since %q", v)
	}
	ns, err := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("invalid since %q", v)
	}
	return sec*1e9 + ns, true, nil
}
