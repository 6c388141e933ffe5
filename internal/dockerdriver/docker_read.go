package dockerdriver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ImagePresent inspects the image; not found is false, not an error.
func (d *Docker) ImagePresent(ctx context.Context, ref string) (bool, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	present, err := d.imagePresent(ctx, ref)
	return present, expired(err, "image inspect", ref)
}

func (d *Docker) imagePresent(ctx context.Context, ref string) (bool, error) {
	if ref == "" {
		return false, NewError("image inspect", ref, ErrInvalid, errors.New("empty image reference"))
	}
	_, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("image inspect", ref, err)
	}
	return true, nil
}

// Inspect returns one container by name or ID.
func (d *Docker) Inspect(ctx context.Context, nameOrID string) (Container, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	c, err := d.inspect(ctx, nameOrID)
	return c, expired(err, "inspect", nameOrID)
}

func (d *Docker) inspect(ctx context.Context, nameOrID string) (Container, error) {
	if nameOrID == "" {
		return Container{}, NewError("inspect", nameOrID, ErrInvalid, errors.New("empty container name"))
	}
	res, err := d.cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
	if err != nil {
		return Container{}, wrap("inspect", nameOrID, err)
	}
	return fromInspect(res.Container), nil
}

func fromInspect(r container.InspectResponse) Container {
	c := Container{
		ID:      r.ID,
		Name:    strings.TrimPrefix(r.Name, "/"),
		ImageID: r.Image,
	}
	c.CreatedAt = parseTime(r.Created)
	if s := r.State; s != nil {
		c.State = State(s.Status)
		c.ExitCode = s.ExitCode
		c.OOMKilled = s.OOMKilled
		c.Error = s.Error
		c.StartedAt = parseTime(s.StartedAt)
		c.FinishedAt = parseTime(s.FinishedAt)
	}
	if cfg := r.Config; cfg != nil {
		c.Image = cfg.Image
		c.Labels = maps.Clone(cfg.Labels)
		c.Env = slices.Clone(cfg.Env)
		c.Cmd = slices.Clone(cfg.Cmd)
	}
	if h := r.HostConfig; h != nil {
		c.Tmpfs = maps.Clone(h.Tmpfs)
		c.MemoryBytes = h.Memory
		c.NanoCPUs = h.NanoCPUs
		if h.PidsLimit != nil {
			c.PidsLimit = *h.PidsLimit
		}
		c.Privileged = h.Privileged
		c.SecurityOpt = slices.Clone(h.SecurityOpt)
		c.RestartPolicy = string(h.RestartPolicy.Name)
		hardeningOf(h, &c)
		for port, bindings := range h.PortBindings {
			if len(bindings) > 0 {
				c.PublishedPorts = append(c.PublishedPorts, port.String())
			}
		}
		sort.Strings(c.PublishedPorts)
	}
	if ns := r.NetworkSettings; ns != nil && len(ns.Networks) > 0 {
		c.Networks = make(map[string]Endpoint, len(ns.Networks))
		for name, ep := range ns.Networks {
			if ep == nil {
				continue
			}
			e := Endpoint{Aliases: slices.Clone(ep.Aliases)}
			if ep.IPAddress.IsValid() {
				e.IPAddress = ep.IPAddress.String()
			}
			c.Networks[name] = e
		}
	}
	for _, m := range r.Mounts {
		c.Mounts = append(c.Mounts, Mount{Type: string(m.Type), Name: m.Name, Destination: m.Destination})
	}
	return c
}

// parseTime reads Docker's RFC 3339 times; Docker says "0001-01-01T00:00:00Z"
// for what has not happened, which is the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// List returns the containers, in every state, carrying all of labels.
func (d *Docker) List(ctx context.Context, labels map[string]string) ([]ContainerSummary, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	list, err := d.list(ctx, labels)
	return list, expired(err, "list", labelString(labels))
}

func (d *Docker) list(ctx context.Context, labels map[string]string) ([]ContainerSummary, error) {
	f := client.Filters{}
	for k, v := range labels {
		f.Add("label", k+"="+v)
	}
	res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, wrap("list", labelString(labels), err)
	}
	out := make([]ContainerSummary, 0, len(res.Items))
	for _, s := range res.Items {
		cs := ContainerSummary{
			ID:        s.ID,
			Image:     s.Image,
			Labels:    maps.Clone(s.Labels),
			State:     State(s.State),
			CreatedAt: time.Unix(s.Created, 0),
		}
		if len(s.Names) > 0 {
			cs.Name = strings.TrimPrefix(s.Names[0], "/")
		}
		out = append(out, cs)
	}
	return out, nil
}

func labelString(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// LogsTail returns the last lines of the container's output, stdout and
// stderr interleaved as written, capped at 16 KiB (the tail).
func (d *Docker) LogsTail(ctx context.Context, nameOrID string, lines int) (string, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	logs, err := d.logsTail(ctx, nameOrID, lines)
	return logs, expired(err, "logs", nameOrID)
}

func (d *Docker) logsTail(ctx context.Context, nameOrID string, lines int) (string, error) {
	if nameOrID == "" {
		return "", NewError("logs", nameOrID, ErrInvalid, errors.New("empty container name"))
	}
	if lines <= 0 {
		lines = 20
	}
	rc, err := d.cli.ContainerLogs(ctx, nameOrID, client.ContainerLogsOptions{
		ShowStdout: true,
		ShowStderr: true,
		Tail:       strconv.Itoa(lines),
	})
	if err != nil {
		return "", wrap("logs", nameOrID, err)
	}
	defer func() { _ = rc.Close() }() // a read stream: nothing is lost if closing fails
	// Our containers never have a TTY, so the stream is always multiplexed.
	buf := newTailBuffer(d.opts.logsLimitBytes)
	if _, err := stdcopy.StdCopy(buf, buf, rc); err != nil {
		return "", wrap("logs", nameOrID, err)
	}
	return buf.String(), nil
}
