package drivertest

import (
	"errors"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// identityAbsent: a host where nothing was planted says so with ErrNotFound, the
// one answer on which a marker may be planted.
func (c contract) identityAbsent(t *testing.T) {
	d, _, ctx := c.setup(t, Config{})
	_, err := d.HostIdentity(ctx)
	wantKind(t, err, dd.ErrNotFound)
}

// identityOldest: a planted marker is read back with the daemon's own ID and
// name; a second one (a concurrent planter's) does not replace it; an identity
// that cannot be a tag is refused.
func (c contract) identityOldest(t *testing.T) {
	d, _, ctx := c.setup(t, Config{})
	first, second := "id-"+randomHex(8), "id-"+randomHex(8)
	if err := d.PlantHostIdentity(ctx, first); err != nil {
		t.Fatal(err)
	}
	got, err := d.HostIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first || got.DaemonID == "" || got.Name == "" {
		t.Errorf("HostIdentity = %+v, want ID %s with the daemon's ID and name", got, first)
	}
	if err := d.PlantHostIdentity(ctx, second); err != nil {
		t.Fatal(err)
	}
	again, err := d.HostIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != got {
		t.Errorf("after a second marker, HostIdentity = %+v, want the first still: %+v", again, got)
	}
	wantKind(t, d.PlantHostIdentity(ctx, "not a tag!"), dd.ErrInvalid)
}

// identityUnreachable: a daemon that does not answer is never taken for one with
// no marker, which would get a new marker planted.
func (c contract) identityUnreachable(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	if err := d.PlantHostIdentity(ctx, "id-"+randomHex(8)); err != nil {
		t.Fatal(err)
	}
	reconnect := env.Disconnect(t)
	defer reconnect()
	_, err := d.HostIdentity(ctx)
	wantKind(t, err, dd.ErrUnavailable)
	if errors.Is(err, dd.ErrNotFound) {
		t.Errorf("an unreachable daemon reads as having no marker: %v", err)
	}
}
