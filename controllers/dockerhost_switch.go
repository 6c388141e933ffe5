package controllers

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// switchDriver is a DockerHost's driver that can be re-dialled when its endpoint
// or TLS material changes: the host's controllers keep the switch, which
// forwards to the current driver. The old driver is closed, which ends its event
// stream; the stream's resubscription reaches the new one, and the identity
// check (the host's marker) still proves which daemon answers.
type switchDriver struct{ cur atomic.Pointer[dd.Driver] }

func newSwitchDriver(d dd.Driver) *switchDriver {
	s := &switchDriver{}
	s.cur.Store(&d)
	return s
}

func (s *switchDriver) get() dd.Driver { return *s.cur.Load() }

// swap makes d the driver and closes the one before.
func (s *switchDriver) swap(d dd.Driver) {
	old := s.cur.Swap(&d)
	if c, ok := (*old).(io.Closer); ok {
		_ = c.Close()
	}
}

func (s *switchDriver) Ping(ctx context.Context) (dd.ServerInfo, error) { return s.get().Ping(ctx) }
func (s *switchDriver) HostIdentity(ctx context.Context) (dd.HostIdentity, error) {
	return s.get().HostIdentity(ctx)
}
func (s *switchDriver) PlantHostIdentity(ctx context.Context, id string) error {
	return s.get().PlantHostIdentity(ctx, id)
}
func (s *switchDriver) ImagePresent(ctx context.Context, ref string) (bool, error) {
	return s.get().ImagePresent(ctx, ref)
}
func (s *switchDriver) PullImage(ctx context.Context, ref string, progress func(dd.PullProgress)) error {
	return s.get().PullImage(ctx, ref, progress)
}
func (s *switchDriver) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	return s.get().CreateContainer(ctx, spec)
}
func (s *switchDriver) Inspect(ctx context.Context, nameOrID string) (dd.Container, error) {
	return s.get().Inspect(ctx, nameOrID)
}
func (s *switchDriver) List(ctx context.Context, labels map[string]string) ([]dd.ContainerSummary, error) {
	return s.get().List(ctx, labels)
}
func (s *switchDriver) Exec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.ExecResult, error) {
	return s.get().Exec(ctx, nameOrID, spec)
}
func (s *switchDriver) PrepareExec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.PreparedExec, error) {
	return s.get().PrepareExec(ctx, nameOrID, spec)
}
func (s *switchDriver) LogsTail(ctx context.Context, nameOrID string, lines int) (string, error) {
	return s.get().LogsTail(ctx, nameOrID, lines)
}
func (s *switchDriver) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	return s.get().Remove(ctx, nameOrID, stopTimeout)
}
func (s *switchDriver) Rename(ctx context.Context, nameOrID, newName string) error {
	return s.get().Rename(ctx, nameOrID, newName)
}
func (s *switchDriver) Events(ctx context.Context, filter dd.EventFilter) <-chan dd.Event {
	return s.get().Events(ctx, filter)
}
