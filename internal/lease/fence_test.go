package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A replica that stops renewing (frozen, partitioned) must stop changing the
// host before its Lease can be another's: the fence refuses once the Lease is
// older than Duration minus RetryPeriod by the replica's own clock.
// The last renewal is set in the past rather than waited for, with margins of
// minutes on either side of the bound, so no load on the machine moves it.
func TestFenceRefusesOnceTheLeaseMayBeAnothers(t *testing.T) {
	const duration, retry, margin = time.Hour, 10 * time.Minute, time.Minute
	table := NewTable(Config{Namespace: "ns", Identity: "me", Duration: duration, RetryPeriod: retry}, nil, nil)
	host := fake.New()
	host.AddImage("img", fake.Image{})
	f := Fenced{Driver: host, Holds: func() bool { return table.Holds("h") }}
	ctx := context.Background()
	create := func(name string) error {
		_, err := f.CreateContainer(ctx, dd.ContainerSpec{Name: name, Image: "img", OwnerLabel: "test", Labels: map[string]string{"test": "fence"}})
		return err
	}

	if err := create("before"); !errors.Is(err, errNotHolder) {
		t.Fatalf("create without the Lease: %v, want errNotHolder", err)
	}
	table.keep("h", &coordv1.Lease{}, time.Now().Add(-(duration - retry - margin)))
	if err := create("held"); err != nil {
		t.Fatalf("create with the Lease renewed a minute short of Duration - RetryPeriod ago: %v", err)
	}
	// No renewal since Duration - RetryPeriod: another replica may take it a
	// RetryPeriod from now, so this one acts no more.
	table.keep("h", &coordv1.Lease{}, time.Now().Add(-(duration - retry)))
	for name, call := range map[string]func() error{
		"create": func() error { return create("late") },
		"remove": func() error { return f.Remove(ctx, "held", time.Second) },
		"rename": func() error { return f.Rename(ctx, "held", "moved") },
		"exec":   func() error { _, err := f.Exec(ctx, "held", dd.ExecSpec{Cmd: []string{"true"}}); return err },
		"detach": func() error { _, err := f.ExecDetached(ctx, "held", dd.ExecSpec{Cmd: []string{"true"}}); return err },
	} {
		if err := call(); !errors.Is(err, errNotHolder) || !errors.Is(err, dd.ErrUnavailable) {
			t.Errorf("%s after the Lease lapsed: %v, want errNotHolder (an unavailable kind)", name, err)
		}
	}
	if _, err := f.Inspect(ctx, "held"); err != nil {
		t.Errorf("reads go through: %v", err)
	}
	if got := host.Calls(fake.VerbCreateContainer); got != 1 {
		t.Errorf("the host saw %d creates, want 1 (the one made while holding the Lease)", got)
	}
}
