package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// DefaultIdentitySettle is how long a manager that planted a marker waits before
// reading it back.
const DefaultIdentitySettle = time.Second

// Identity proves which Docker host a driver talks to, by an identity the manager
// planted there and reads back: the daemon's own ID is not enough (daemons sharing
// /etc/docker/key.json, or machines cloned from one image, report the same one).
//
// A host without a marker gets one with a new random ID, so a host the manager has
// not seen, or one whose marker was removed, never passes for another. Anything
// else (the daemon does not answer, the read fails) proves nothing: the caller
// must then do nothing destructive.
//
// A proof is kept until Forget: Docker calls reach one daemon for as long as the
// event stream stays connected, and the owner of Identity calls Forget when the
// stream breaks (a daemon restart, or another daemon behind the same address).
type Identity struct {
	driver dd.Driver
	// settle is how long a planter waits before reading back, so that a marker
	// another manager planted at the same moment is seen too, and both read back
	// the oldest.
	settle time.Duration

	mu     sync.Mutex
	proven *dd.HostIdentity
	at     time.Time
}

// NewIdentity proves the identity of the Docker host behind driver; settle is
// DefaultIdentitySettle unless a test says otherwise.
func NewIdentity(driver dd.Driver, settle time.Duration) *Identity {
	return &Identity{driver: driver, settle: settle}
}

// Prove returns the host's identity: the one proven since the last Forget, or
// read back from the daemon, planting a marker first when there is none.
func (i *Identity) Prove(ctx context.Context) (dd.HostIdentity, error) {
	return i.prove(ctx, 0)
}

// Recheck is Prove, but reads again when the proof is older than maxAge: for a
// Sandbox bound to another host, whose marker an operator may have restored.
func (i *Identity) Recheck(ctx context.Context, maxAge time.Duration) (dd.HostIdentity, error) {
	return i.prove(ctx, maxAge)
}

// Forget drops the proof: the next Prove reads the marker again.
func (i *Identity) Forget() {
	if chaosplant.Active(chaosplant.IdentityKeptOnRedial) {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.proven = nil
}

func (i *Identity) prove(ctx context.Context, maxAge time.Duration) (dd.HostIdentity, error) {
	// Note: one prover at a time, so that one manager plants at most one marker.
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.proven != nil && (maxAge <= 0 || time.Since(i.at) < maxAge) {
		dd.SetProof(ctx, i.proven.Dial)
		return *i.proven, nil
	}
	id, err := i.read(ctx)
	if err != nil {
		i.proven = nil
		return dd.HostIdentity{}, fmt.Errorf("cannot prove which Docker host this is: %w", err)
	}
	i.proven, i.at = &id, time.Now()
	// Note: ctx's calls (and what they start) now reach this dial only.
	dd.SetProof(ctx, id.Dial)
	return id, nil
}

// read reads the marker back, planting one first when the daemon says there is none.
func (i *Identity) read(ctx context.Context) (dd.HostIdentity, error) {
	id, err := i.driver.HostIdentity(ctx)
	if !errors.Is(err, dd.ErrNotFound) {
		return id, err
	}
	if err := i.driver.PlantHostIdentity(ctx, uuid.NewString()); err != nil {
		return dd.HostIdentity{}, err
	}
	t := time.NewTimer(i.settle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return dd.HostIdentity{}, ctx.Err()
	case <-t.C:
	}
	return i.driver.HostIdentity(ctx)
}
