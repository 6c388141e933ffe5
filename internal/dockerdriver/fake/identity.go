package fake

import (
	"context"
	"errors"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// DefaultDaemonID is every fake's daemon ID unless WithDaemonID says otherwise:
// like real daemons sharing /etc/docker/key.json, fakes cannot be told apart by it.
const DefaultDaemonID = "FAKE:DAEM:ONID:SHAR:EDKE:YJSO:N000:0000:0000:0000:0000:0000"

// WithDaemonID sets the ID the daemon reports of itself.
func WithDaemonID(id string) Option { return func(f *Driver) { f.daemonID = id } }

// WithHostName sets the name the daemon reports of itself (default "fake-host").
func WithHostName(name string) Option { return func(f *Driver) { f.hostName = name } }

// HostIdentity reads the oldest marker back; see dd.Driver.
func (f *Driver) HostIdentity(ctx context.Context) (dd.HostIdentity, error) {
	if err := f.enter(ctx, VerbHostIdentity); err != nil {
		return dd.HostIdentity{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.markers) == 0 {
		return dd.HostIdentity{}, dd.NewError(ops[VerbHostIdentity], dd.IdentityRepo, dd.ErrNotFound,
			errors.New("no identity marker is planted on this Docker host"))
	}
	return dd.HostIdentity{ID: f.markers[0], DaemonID: f.daemonID, Name: f.hostName}, nil
}

// PlantHostIdentity plants a marker; an older one keeps being read back.
func (f *Driver) PlantHostIdentity(ctx context.Context, id string) error {
	if err := f.enter(ctx, VerbPlantIdentity, id); err != nil {
		return err
	}
	if err := dd.ValidateIdentity(dd.IdentityRepo, id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.markers = append(f.markers, id)
	return nil
}

// Prune does what `docker system prune --volumes` does to what the fake models:
// it removes every container that is not running or paused, with its volumes. With all (as
// `-a`), it also removes the images no container uses, the identity markers
// among them.
func (f *Driver) Prune(all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	used := map[string]bool{}
	for _, c := range f.containers {
		if c.c.State == dd.StateRunning || c.c.State == dd.StatePaused {
			used[mustNormalize(c.c.Image)] = true
			continue
		}
		f.destroy(c)
	}
	if !all {
		return
	}
	f.markers = nil
	for ref := range f.images {
		if !used[ref] {
			delete(f.images, ref)
		}
	}
}

// RestartDaemon does what a daemon restart does: the event streams break, every
// running container stops (none has a restart policy) and the streams resync.
// Images and identity markers stay.
func (f *Driver) RestartDaemon() {
	f.DropEvents()
	f.mu.Lock()
	for _, c := range f.containers {
		f.exit(c, 143, false)
	}
	f.mu.Unlock()
	f.RestoreEvents()
}
