package dockerdriver

import (
	"context"
	"time"
)

// The Switch's calls go to the current dial's driver; a pass's calls only to
// the dial it proved (at).

func (s *Switch) Ping(ctx context.Context) (ServerInfo, error) { return s.get().Ping(ctx) }

// HostIdentity reads the identity, and says which dial answered.
func (s *Switch) HostIdentity(ctx context.Context) (HostIdentity, error) {
	cur := s.cur.Load()
	id, err := cur.d.HostIdentity(ctx)
	id.Dial = cur.n
	return id, err
}

// PlantHostIdentity plants on the current dial: a proof is read back after it.
func (s *Switch) PlantHostIdentity(ctx context.Context, id string) error {
	return s.get().PlantHostIdentity(ctx, id)
}

func (s *Switch) ImagePresent(ctx context.Context, ref string) (bool, error) {
	d, err := s.at(ctx, "image present", ref)
	if err != nil {
		return false, err
	}
	return d.ImagePresent(ctx, ref)
}

func (s *Switch) PullImage(ctx context.Context, ref string, progress func(PullProgress)) error {
	d, err := s.at(ctx, "pull", ref)
	if err != nil {
		return err
	}
	return d.PullImage(ctx, ref, progress)
}

func (s *Switch) CreateContainer(ctx context.Context, spec ContainerSpec) (Container, error) {
	d, err := s.at(ctx, "create", spec.Name)
	if err != nil {
		return Container{}, err
	}
	return d.CreateContainer(ctx, spec)
}

func (s *Switch) Inspect(ctx context.Context, nameOrID string) (Container, error) {
	d, err := s.at(ctx, "inspect", nameOrID)
	if err != nil {
		return Container{}, err
	}
	return d.Inspect(ctx, nameOrID)
}

func (s *Switch) List(ctx context.Context, labels map[string]string) ([]ContainerSummary, error) {
	d, err := s.at(ctx, "list", "")
	if err != nil {
		return nil, err
	}
	return d.List(ctx, labels)
}

func (s *Switch) Exec(ctx context.Context, nameOrID string, spec ExecSpec) (ExecResult, error) {
	d, err := s.at(ctx, "exec", nameOrID)
	if err != nil {
		return ExecResult{}, err
	}
	return d.Exec(ctx, nameOrID, spec)
}

func (s *Switch) PrepareExec(ctx context.Context, nameOrID string, spec ExecSpec) (PreparedExec, error) {
	d, err := s.at(ctx, "exec", nameOrID)
	if err != nil {
		return nil, err
	}
	return d.PrepareExec(ctx, nameOrID, spec)
}

func (s *Switch) ExecDetached(ctx context.Context, nameOrID string, spec ExecSpec) (string, error) {
	d, err := s.at(ctx, "exec", nameOrID)
	if err != nil {
		return "", err
	}
	return d.ExecDetached(ctx, nameOrID, spec)
}

func (s *Switch) LogsTail(ctx context.Context, nameOrID string, lines int) (string, error) {
	d, err := s.at(ctx, "logs", nameOrID)
	if err != nil {
		return "", err
	}
	return d.LogsTail(ctx, nameOrID, lines)
}

func (s *Switch) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	d, err := s.at(ctx, "remove", nameOrID)
	if err != nil {
		return err
	}
	return d.Remove(ctx, nameOrID, stopTimeout)
}

func (s *Switch) Rename(ctx context.Context, nameOrID, newName string) error {
	d, err := s.at(ctx, "rename", nameOrID)
	if err != nil {
		return err
	}
	return d.Rename(ctx, nameOrID, newName)
}
