package dockerdriver

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// Switch is a DockerHost's driver that can be re-dialled when its endpoint
// or TLS material changes: the host's controllers keep the switch, which
// forwards to the current driver. The old driver is closed, which ends its event
// stream; the stream's resubscription reaches the new one, and the identity
// check (the host's marker) still proves which daemon answers.
type Switch struct{ cur atomic.Pointer[Driver] }

// NewSwitch forwards to d until the first Swap.
func NewSwitch(d Driver) *Switch {
	s := &Switch{}
	s.cur.Store(&d)
	return s
}

func (s *Switch) get() Driver { return *s.cur.Load() }

// Swap makes d the driver and closes the one before.
func (s *Switch) Swap(d Driver) {
	old := s.cur.Swap(&d)
	if c, ok := (*old).(io.Closer); ok {
		_ = c.Close()
	}
}

func (s *Switch) Ping(ctx context.Context) (ServerInfo, error) { return s.get().Ping(ctx) }
func (s *Switch) HostIdentity(ctx context.Context) (HostIdentity, error) {
	return s.get().HostIdentity(ctx)
}
func (s *Switch) PlantHostIdentity(ctx context.Context, id string) error {
	return s.get().PlantHostIdentity(ctx, id)
}
func (s *Switch) ImagePresent(ctx context.Context, ref string) (bool, error) {
	return s.get().ImagePresent(ctx, ref)
}
func (s *Switch) PullImage(ctx context.Context, ref string, progress func(PullProgress)) error {
	return s.get().PullImage(ctx, ref, progress)
}
func (s *Switch) CreateContainer(ctx context.Context, spec ContainerSpec) (Container, error) {
	return s.get().CreateContainer(ctx, spec)
}
func (s *Switch) Inspect(ctx context.Context, nameOrID string) (Container, error) {
	return s.get().Inspect(ctx, nameOrID)
}
func (s *Switch) List(ctx context.Context, labels map[string]string) ([]ContainerSummary, error) {
	return s.get().List(ctx, labels)
}
func (s *Switch) Exec(ctx context.Context, nameOrID string, spec ExecSpec) (ExecResult, error) {
	return s.get().Exec(ctx, nameOrID, spec)
}
func (s *Switch) PrepareExec(ctx context.Context, nameOrID string, spec ExecSpec) (PreparedExec, error) {
	return s.get().PrepareExec(ctx, nameOrID, spec)
}
func (s *Switch) LogsTail(ctx context.Context, nameOrID string, lines int) (string, error) {
	return s.get().LogsTail(ctx, nameOrID, lines)
}
func (s *Switch) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	return s.get().Remove(ctx, nameOrID, stopTimeout)
}
func (s *Switch) Rename(ctx context.Context, nameOrID, newName string) error {
	return s.get().Rename(ctx, nameOrID, newName)
}
func (s *Switch) Events(ctx context.Context, filter EventFilter) <-chan Event {
	return s.get().Events(ctx, filter)
}
