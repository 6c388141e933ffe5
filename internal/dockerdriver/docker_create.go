package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// SecurityOptNoNewPrivileges is set on every container: no setuid escalation.
const SecurityOptNoNewPrivileges = "no-new-privileges"

// CapAll, dropped from every container: it keeps only ContainerSpec.CapAdd.
const CapAll = "ALL"

// validName is Docker's own rule for container names.
var validName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// Validate checks what both drivers require of a spec before touching Docker.
func (s ContainerSpec) Validate() error {
	var problem string
	switch {
	case !validName.MatchString(s.Name):
		problem = fmt.Sprintf("invalid container name %q: want %s", s.Name, validName)
	case s.Image == "":
		problem = "no image"
	case s.OwnerLabel == "":
		problem = "no owner label: a container is never adopted on the strength of its name alone"
	case s.Labels[s.OwnerLabel] == "":
		problem = fmt.Sprintf("owner label %s has no value in Labels", s.OwnerLabel)
	case s.MemoryBytes < 0 || s.NanoCPUs < 0 || s.PidsLimit < 0:
		problem = "negative resource limit"
	case len(s.Aliases) > 0 && s.Network == "":
		problem = "aliases need a user-defined network"
	default:
		problem = s.checkFiles()
	}
	if problem != "" {
		return NewError("create", s.Name, ErrInvalid, errors.New(problem))
	}
	return nil
}

// checkFiles says what is wrong with Files ("": nothing).
func (s ContainerSpec) checkFiles() string {
	for _, f := range s.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return fmt.Sprintf("file path %q: want a clean absolute path", f.Path)
		}
		for mount := range s.Tmpfs {
			if f.Path == mount || strings.HasPrefix(f.Path, strings.TrimSuffix(mount, "/")+"/") {
				return fmt.Sprintf("file %s lies under the tmpfs mount %s, which would hide it", f.Path, mount)
			}
		}
	}
	return ""
}

// Owns reports whether c carries the ownership label value spec names.
func (s ContainerSpec) Owns(c Container) bool {
	v, ok := c.Labels[s.OwnerLabel]
	return ok && v == s.Labels[s.OwnerLabel]
}

// EnvList renders Env as Docker's KEY=value list, sorted for stable specs.
func (s ContainerSpec) EnvList() []string { return envList(s.Env) }

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// CreateContainer creates and starts spec's container, or adopts the
// existing one of that name when it carries spec's owner label value.
//
// Adoption semantics: a container of ours that was created but never started
// (a previous call died between create and start) is started; one in any
// other state is returned as it is, so that the caller sees that it exited
// (exit code, logs) and decides whether to remove and recreate it. Adoption
// does not compare the rest of the spec: labels are immutable, so a caller
// that changes image or limits must compare and recreate itself.
//
// A container this call created that then fails to start is removed again,
// so a retry starts clean.
func (d *Docker) CreateContainer(ctx context.Context, spec ContainerSpec) (Container, error) {
	ctx, cancel, expired := Bound(ctx, 2*d.opts.callTimeout)
	defer cancel()
	c, err := d.createContainer(ctx, spec)
	return c, expired(err, "create", spec.Name)
}

func (d *Docker) createContainer(ctx context.Context, spec ContainerSpec) (Container, error) {
	if err := spec.Validate(); err != nil {
		return Container{}, err
	}
	// The create may race with another creator (or a remover); two rounds
	// cover "exists" turning into "gone" between create and inspect.
	for range 2 {
		res, err := d.cli.ContainerCreate(ctx, createOptions(spec))
		if err == nil {
			return d.start(ctx, spec, res.ID)
		}
		if !cerrdefs.IsConflict(err) {
			return Container{}, wrap("create", spec.Name, err)
		}
		existing, ierr := d.Inspect(ctx, spec.Name)
		if errors.Is(ierr, ErrNotFound) {
			continue
		}
		if ierr != nil {
			return Container{}, wrap("create", spec.Name, ierr)
		}
		if !spec.Owns(existing) {
			return Container{}, &ConflictError{
				Name:       spec.Name,
				OwnerLabel: spec.OwnerLabel,
				Want:       spec.Labels[spec.OwnerLabel],
				Existing:   existing,
			}
		}
		if existing.State != StateCreated {
			return existing, nil
		}
		return d.start(ctx, spec, existing.ID)
	}
	return Container{}, NewError("create", spec.Name, ErrConflict, errors.New("the name keeps changing hands; try again"))
}

// start writes spec's files into id, starts it and returns it inspected. If
// that fails, the container is removed again (best effort), whether this call
// created it or adopted it: it is ours and never ran, and a start the daemon
// refused once it may refuse for good (a daemon that went away mid-start
// leaves a task behind, and every later start of that ID meets it), where a
// new container starts afresh. Note: an adopted container that was never
// started gets its files again, since its creator may have died before
// writing them.
func (d *Docker) start(ctx context.Context, spec ContainerSpec, id string) (Container, error) {
	op, err := "copy files to", d.copyFiles(ctx, id, spec.Files)
	if err == nil {
		op = "start"
		_, err = d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.callTimeout)
		_, _ = d.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		werr := wrap(op, spec.Name, err)
		var e *Error
		if errors.As(werr, &e) && !errors.Is(werr, ErrInvalid) && refusedAtStart(err) {
			e.Kinds = append(e.Kinds, ErrInvalid)
		}
		return Container{}, werr
	}
	c, err := d.Inspect(ctx, id)
	if err != nil {
		return Container{}, wrap("create", spec.Name, err)
	}
	return c, nil
}

func createOptions(spec ContainerSpec) client.ContainerCreateOptions {
	cfg := &container.Config{
		Image:  spec.Image,
		Labels: maps.Clone(spec.Labels),
		Env:    spec.EnvList(),
		Cmd:    slices.Clone(spec.Cmd),
	}
	host := &container.HostConfig{
		// No PortBindings and no PublishAllPorts: sandboxes are reached over
		// the Docker network, never through the host.
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Privileged:    false,
		SecurityOpt:   []string{SecurityOptNoNewPrivileges},
		CapDrop:       []string{CapAll},
		CapAdd:        slices.Clone(spec.CapAdd),
		LogConfig:     logConfig(spec.Log),
		Tmpfs:         maps.Clone(spec.Tmpfs),
		Resources: container.Resources{
			Memory:   spec.MemoryBytes,
			NanoCPUs: spec.NanoCPUs,
			// Note: memory plus swap equal to memory is no swap; Docker's default
			// (0) would allow as much swap again.
			MemorySwap: spec.MemoryBytes,
		},
	}
	if spec.PidsLimit > 0 {
		host.PidsLimit = &spec.PidsLimit
	}
	var netCfg *network.NetworkingConfig
	if spec.Network != "" {
		host.NetworkMode = container.NetworkMode(spec.Network)
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			spec.Network: {Aliases: slices.Clone(spec.Aliases)},
		}}
	}
	return client.ContainerCreateOptions{Name: spec.Name, Config: cfg, HostConfig: host, NetworkingConfig: netCfg}
}
