package dockerdriver

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// lifecycle is the set of container actions Events reports.
var lifecycle = []EventType{EventCreate, EventStart, EventDie, EventOOM, EventDestroy, EventPause, EventUnpause, EventRename}

// Events streams container lifecycle events; see Driver.Events.
//
// Each connection asks the daemon to replay from just after the last event
// seen (or from the call, for the first one), so a short interruption with
// the same daemon loses nothing; a restarted daemon has forgotten its
// history, which is why a reconnection is always followed by EventResync
// (and a break always announced by EventLost).
// Replays can repeat an event: consumers must be idempotent, as a level-based
// controller is.
func (d *Docker) Events(ctx context.Context, filter EventFilter) <-chan Event {
	out := make(chan Event, 64)
	go d.streamEvents(ctx, filter, out)
	return out
}

func (d *Docker) streamEvents(ctx context.Context, filter EventFilter, out chan<- Event) {
	defer close(out)
	since := time.Now()
	delay := d.opts.backoffMin
	lost := false // a connection failed since the last good one
	for ctx.Err() == nil {
		connected := d.eventsOnce(ctx, filter, &since, lost, out)
		if connected {
			delay = d.opts.backoffMin
		}
		if ctx.Err() != nil {
			return
		}
		// One EventLost per outage: when a connection that worked breaks, or
		// when the very first one cannot be made.
		if (connected || !lost) && !send(ctx, out, Event{Type: EventLost, Time: time.Now()}) {
			return
		}
		lost = true
		// Jitter, so that many controllers do not hammer a restarting daemon in step.
		wait := delay/2 + rand.N(delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		delay = min(2*delay, d.opts.backoffMax)
	}
}

// eventsOnce runs one connection until it breaks. It reports whether the
// connection was established at all.
func (d *Docker) eventsOnce(ctx context.Context, filter EventFilter, since *time.Time, lost bool, out chan<- Event) bool {
	// Events cannot tell "could not connect" from "connected" before the
	// first message, so ping first: a resync is then only sent once the
	// daemon really answers.
	pctx, cancel := context.WithTimeout(ctx, d.opts.callTimeout)
	_, err := d.cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	cancel()
	if err != nil {
		return false
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := d.cli.Events(sctx, client.EventsListOptions{
		Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: eventFilters(filter),
	})
	if lost && !send(ctx, out, Event{Type: EventResync, Time: time.Now()}) {
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return true
		case <-res.Err: //nolint:errcheck // any break is handled alike: the caller sends EventLost and reconnects (a failed Ping is dropped so too)
			return true
		case m := <-res.Messages:
			if m.TimeNano > 0 {
				*since = time.Unix(0, m.TimeNano+1)
			}
			if !send(ctx, out, fromMessage(m)) {
				return true
			}
		}
	}
}

func send(ctx context.Context, out chan<- Event, e Event) bool {
	select {
	case out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

func eventFilters(filter EventFilter) client.Filters {
	f := client.Filters{}
	f.Add("type", string(events.ContainerEventType))
	for _, t := range lifecycle {
		f.Add("event", string(t))
	}
	if filter.ExecDie {
		f.Add("event", string(EventExecDie))
	}
	for k, v := range filter.Labels {
		f.Add("label", k+"="+v)
	}
	for _, n := range filter.Names {
		f.Add("container", n)
	}
	return f
}

// fromMessage converts a daemon event. Docker mixes the container's labels
// with its own attributes (name, image, exitCode, ...); those are taken out.
func fromMessage(m events.Message) Event {
	attrs := maps.Clone(m.Actor.Attributes)
	e := Event{
		Type: EventType(m.Action),
		ID:   m.Actor.ID,
		Name: attrs["name"],
		Time: time.Unix(0, m.TimeNano),
	}
	if m.TimeNano == 0 {
		e.Time = time.Unix(m.Time, 0)
	}
	if code, ok := attrs["exitCode"]; ok {
		e.ExitCode, _ = strconv.Atoi(code)
	}
	e.OldName = strings.TrimPrefix(attrs["oldName"], "/") // Docker's own form, "/name"
	if e.Type == EventExecDie {
		e.ExecID = attrs["execID"]
		delete(attrs, "execID")
	}
	for _, k := range []string{"name", "image", "exitCode", "signal", "execDuration", "oldName"} {
		delete(attrs, k)
	}
	e.Labels = attrs
	return e
}
