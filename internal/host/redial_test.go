package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// redialled is a host's driver re-dialled from daemon a to daemon b (its
// DockerHost's endpoint changed: b may be another host) after a pass proved
// it reached a; ctx is that pass's.
func redialled(t *testing.T) (ctx context.Context, sw *dd.Switch, b *fake.Driver) {
	t.Helper()
	a, b := fake.New(), fake.New()
	sw = dd.NewSwitch(a)
	ctx = dd.WithProof(context.Background())
	if _, err := host.NewIdentity(sw, time.Millisecond).Prove(ctx); err != nil {
		t.Fatal(err)
	}
	sw.Swap(b)
	return ctx, sw, b
}

// A pass that proved which daemon its host's driver reaches acts there only: a
// pull or a create it asks for after the driver was re-dialled never reaches
// the daemon dialled since (found by the chaos suite: a pull on the daemon an
// endpoint switch pointed at), however long the work goes on beside it.
func TestWorkProvenBeforeARedialNeverReachesTheNewDaemon(t *testing.T) {
	t.Run("pull", func(t *testing.T) {
		ctx, sw, b := redialled(t)
		svc := service(256 << 20)
		b.AddRegistryImage(svc.Image(), fake.Image{Layers: 1})
		n := newNotified()
		st := host.NewPulls(sw, n.notify, nil).Ensure(ctx, svc.Image(), "ns/a")
		if st.Present || !errors.Is(st.Err, dd.ErrUnavailable) {
			t.Errorf("Ensure after the re-dial = %+v, want refused as unavailable", st)
		}
		if got := b.Calls(fake.VerbPullImage) + b.Calls(fake.VerbImagePresent); got != 0 {
			t.Errorf("the daemon dialled after the proof had %d image calls, want none", got)
		}
	})
	t.Run("create", func(t *testing.T) {
		// The image is there when the pass asks; the driver is re-dialled
		// before the create, which goes on beside the pass.
		a, b := fake.New(), fake.New()
		svc := service(256 << 20)
		a.AddImage(svc.Image(), fake.Image{Layers: 1})
		b.AddImage(svc.Image(), fake.Image{Layers: 1})
		var sw *dd.Switch
		sw = dd.NewSwitch(swapOnPresent{Driver: a, swap: sync.OnceFunc(func() { sw.Swap(b) })})
		ctx := dd.WithProof(context.Background())
		if _, err := host.NewIdentity(sw, time.Millisecond).Prove(ctx); err != nil {
			t.Fatal(err)
		}
		h := host.New(sw, time.Second, host.NewPulls(sw, func(string) {}, nil))
		if _, err := h.Ensure(ctx, svc, 0, "ns/a"); !errors.Is(err, dd.ErrUnavailable) {
			t.Errorf("Ensure across the re-dial: %v, want refused as unavailable", err)
		}
		if got := b.Calls(fake.VerbCreateContainer); got != 0 {
			t.Errorf("the daemon dialled after the proof had %d creates, want none", got)
		}
	})
	t.Run("proven again", func(t *testing.T) {
		ctx, sw, b := redialled(t)
		if _, err := sw.List(ctx, nil); !errors.Is(err, dd.ErrUnavailable) {
			t.Fatalf("List after the re-dial: %v, want refused as unavailable", err)
		}
		next := dd.WithProof(context.Background())
		if _, err := host.NewIdentity(sw, time.Millisecond).Prove(next); err != nil {
			t.Fatal(err)
		}
		if _, err := sw.List(next, nil); err != nil {
			t.Errorf("List by a pass that proved the new daemon: %v", err)
		}
		if _, err := sw.List(context.Background(), nil); err != nil {
			t.Errorf("List outside any pass: %v", err)
		}
		if b.Calls(fake.VerbList) != 2 {
			t.Errorf("the new daemon had %d lists, want 2", b.Calls(fake.VerbList))
		}
	})
}

// swapOnPresent re-dials its switch once it has answered whether an image is present.
type swapOnPresent struct {
	dd.Driver
	swap func()
}

func (s swapOnPresent) ImagePresent(ctx context.Context, ref string) (bool, error) {
	ok, err := s.Driver.ImagePresent(ctx, ref)
	s.swap()
	return ok, err
}
