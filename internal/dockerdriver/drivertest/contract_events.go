package drivertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of the event stream: order, and Lost/Resync after a break.

// collect reads events until one of type until arrives.
func collect(t *testing.T, ch <-chan dd.Event, until dd.EventType, within time.Duration) []dd.Event {
	t.Helper()
	var got []dd.Event
	timeout := time.After(within)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("event stream closed; got %v", types(got))
			}
			got = append(got, e)
			if e.Type == until {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event within %v; got %v", until, within, types(got))
		}
	}
}

func types(es []dd.Event) []dd.EventType {
	out := make([]dd.EventType, len(es))
	for i, e := range es {
		out[i] = e.Type
	}
	return out
}

func (c contract) eventsOrder(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "events", Script{Exit: 3})
	byLabel := d.Events(ctx, dd.EventFilter{Labels: map[string]string{OwnerLabel: s.Labels[OwnerLabel]}})
	byName := d.Events(ctx, dd.EventFilter{Names: []string{s.Name}})
	created := mustCreate(t, ctx, d, s)

	got := collect(t, byLabel, dd.EventDie, 15*time.Second)
	if err := d.Remove(ctx, s.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	got = append(got, collect(t, byLabel, dd.EventDestroy, 15*time.Second)...)
	if want := []dd.EventType{dd.EventCreate, dd.EventStart, dd.EventDie, dd.EventDestroy}; !slices.Equal(types(got), want) {
		t.Fatalf("events %v, want %v", types(got), want)
	}
	for i, e := range got {
		if e.ID != created.ID || e.Name != s.Name || e.Labels[OwnerLabel] != s.Labels[OwnerLabel] || e.Time.IsZero() {
			t.Errorf("event %d = %+v: want id %s, name %s, our labels, a time", i, e, created.ID, s.Name)
		}
		if i > 0 && e.Time.Before(got[i-1].Time) {
			t.Errorf("event %d (%s) is older than event %d", i, e.Type, i-1)
		}
		if _, leaked := e.Labels["exitCode"]; leaked {
			t.Errorf("event %d labels carry Docker's attributes: %v", i, e.Labels)
		}
	}
	if got[2].ExitCode != 3 {
		t.Errorf("die exit code %d, want 3", got[2].ExitCode)
	}
	named := collect(t, byName, dd.EventDestroy, 15*time.Second)
	if want := []dd.EventType{dd.EventCreate, dd.EventStart, dd.EventDie, dd.EventDestroy}; !slices.Equal(types(named), want) {
		t.Errorf("events by name %v, want %v", types(named), want)
	}
}

func (c contract) eventsResync(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	labels := map[string]string{"sandbox.roboco.io/test-group": randomHex(4)}
	ch := d.Events(ctx, dd.EventFilter{Labels: labels})
	mk := func() dd.Container {
		s := spec(env, "resync", Script{Sleep: Forever})
		maps.Copy(s.Labels, labels)
		return mustCreate(t, ctx, d, s)
	}
	first := mk()
	if e := collect(t, ch, dd.EventStart, 15*time.Second); e[len(e)-1].ID != first.ID {
		t.Fatalf("start event for %s, want %s", e[len(e)-1].ID, first.ID)
	}

	reconnect := env.Disconnect(t)
	eventually(t, 10*time.Second, "Ping failing while disconnected", func() (bool, string) {
		_, err := d.Ping(ctx)
		return errors.Is(err, dd.ErrUnavailable) && err.Error() != "", fmt.Sprint(err)
	})
	reconnect()

	got := collect(t, ch, dd.EventResync, 15*time.Second)
	if last := got[len(got)-1]; last.ID != "" || last.Time.IsZero() {
		t.Errorf("resync event %+v: want only a time", last)
	}
	// The outage was announced before the resync, exactly once.
	if n := slices.IndexFunc(got, func(e dd.Event) bool { return e.Type == dd.EventLost }); n < 0 {
		t.Errorf("no %s event before the resync; got %v", dd.EventLost, types(got))
	} else if got[n].ID != "" || got[n].Time.IsZero() {
		t.Errorf("lost event %+v: want only a time", got[n])
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(e dd.Event) bool { return e.Type != dd.EventLost })); n != 1 {
		t.Errorf("%d %s events for one outage, want 1; got %v", n, dd.EventLost, types(got))
	}
	second := mk()
	for {
		e := collect(t, ch, dd.EventStart, 15*time.Second)
		if e[len(e)-1].ID == second.ID {
			break
		}
	}
}
