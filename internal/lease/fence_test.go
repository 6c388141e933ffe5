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
func TestFenceRefusesOnceTheLeaseMayBeAnothers(t *testing.T) {
	table := NewTable(Config{Namespace: "ns", Identity: "me", Duration: 300 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, nil, nil)
	host := fake.New()
	host.AddImage("img", fake.Image{})
	f := Fenced{Driver: host, Holds: func() bool { return table.Holds("h") }}
	ctx := context.Background()

	if _, err := f.CreateContainer(ctx, dd.ContainerSpec{Name: "before", Image: "img", OwnerLabel: "test", Labels: map[string]string{"test": "fence"}}); !errors.Is(err, errNotHolder) {
		t.Fatalf("create without the Lease: %v, want errNotHolder", err)
	}
	table.keep("h", &coordv1.Lease{}, time.Now())
	if _, err := f.CreateContainer(ctx, dd.ContainerSpec{Name: "held", Image: "img", OwnerLabel: "test", Labels: map[string]string{"test": "fence"}}); err != nil {
		t.Fatalf("create while holding the Lease: %v", err)
	}
	time.Sleep(250 * time.Millisecond) // past Duration - RetryPeriod without a renewal
	for name, call := range map[string]func() error{
		"create": func() error {
			_, err := f.CreateContainer(ctx, dd.ContainerSpec{Name: "late", Image: "img", OwnerLabel: "test", Labels: map[string]string{"test": "fence"}})
			return err
		},
		"remove": func() error { return f.Remove(ctx, "held", time.Second) },
		"rename": func() error { return f.Rename(ctx, "held", "moved") },
		"exec":   func() error { _, err := f.Exec(ctx, "held", dd.ExecSpec{Cmd: []string{"true"}}); return err },
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
