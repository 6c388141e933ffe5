package host_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

func prove(t *testing.T, i *host.Identity) dd.HostIdentity {
	t.Helper()
	id, err := i.Prove(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Two daemons reporting one daemon ID (a shared key.json) are told apart; each
// keeps its identity across a manager restart, a daemon restart and a prune.
func TestIdentityTellsApartDaemonsSharingAnID(t *testing.T) {
	a, b := fake.New(), fake.New()
	idA, idB := prove(t, host.NewIdentity(a, 0)), prove(t, host.NewIdentity(b, 0))
	if idA.DaemonID != idB.DaemonID {
		t.Fatalf("the fakes should share a daemon ID: %s, %s", idA.DaemonID, idB.DaemonID)
	}
	if idA.ID == "" || idA.ID == idB.ID {
		t.Fatalf("two hosts with one daemon ID proved %q and %q, want two identities", idA.ID, idB.ID)
	}

	restarted := host.NewIdentity(a, 0) // a new manager process
	if got := prove(t, restarted); got != idA {
		t.Errorf("after a manager restart: %+v, want %+v", got, idA)
	}
	a.RestartDaemon()
	restarted.Forget() // the event stream broke
	if got := prove(t, restarted); got != idA {
		t.Errorf("after a daemon restart: %+v, want %+v", got, idA)
	}
	a.Prune(false)
	restarted.Forget()
	if got := prove(t, restarted); got != idA {
		t.Errorf("after docker system prune --volumes: %+v, want %+v", got, idA)
	}
	if got := a.Calls(fake.VerbPlantIdentity); got != 1 {
		t.Errorf("%d markers planted on one host, want 1", got)
	}
}

// A marker removed for good (docker system prune -a) makes a new identity, never
// the old one: the host is not silently taken for what it was.
func TestIdentityAfterMarkerRemovedIsNew(t *testing.T) {
	f := fake.New()
	i := host.NewIdentity(f, 0)
	before := prove(t, i)
	f.Prune(true)
	i.Forget()
	if after := prove(t, i); after.ID == before.ID {
		t.Errorf("after the marker was removed the host still proves %s", after.ID)
	}
}

// A daemon that does not answer proves nothing and gets no marker.
func TestIdentityUnprovenWhenDockerFails(t *testing.T) {
	f := fake.New()
	f.Inject(fake.Fault{Verb: fake.VerbHostIdentity, Err: dd.ErrUnavailable})
	_, err := host.NewIdentity(f, 0).Prove(t.Context())
	if !errors.Is(err, dd.ErrUnavailable) {
		t.Fatalf("Prove = %v, want an ErrUnavailable error", err)
	}
	if n := f.Calls(fake.VerbPlantIdentity); n != 0 {
		t.Errorf("%d markers planted on a daemon that did not answer", n)
	}
}

// A proof costs no Docker call until it is forgotten; Recheck reads again only
// when the proof is older than asked.
func TestIdentityIsKeptUntilForgotten(t *testing.T) {
	f := fake.New()
	i := host.NewIdentity(f, 0)
	prove(t, i)
	f.ResetCalls()
	prove(t, i)
	if _, err := i.Recheck(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := f.TotalCalls(); n != 0 {
		t.Errorf("%d Docker calls for a proven identity, want 0", n)
	}
	if _, err := i.Recheck(t.Context(), time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if n := f.Calls(fake.VerbHostIdentity); n != 1 {
		t.Errorf("Recheck of an old proof read %d times, want 1", n)
	}
}

// Managers planting on a fresh host at the same moment agree on one identity.
func TestIdentityConcurrentPlantersAgree(t *testing.T) {
	f := fake.New()
	// Both read "none" before either plants.
	f.Inject(fake.Fault{Verb: fake.VerbPlantIdentity, Delay: 20 * time.Millisecond})
	ids := make([]dd.HostIdentity, 4)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for n := range ids {
		wg.Go(func() { ids[n], errs[n] = host.NewIdentity(f, 100*time.Millisecond).Prove(t.Context()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent planters proved %+v", ids)
		}
	}
	if n := f.Calls(fake.VerbPlantIdentity); n < 2 {
		t.Errorf("%d planted: the race was not exercised", n)
	}
}
