package dockerdriver

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/flight"
)

// Docker is the Driver for one Docker daemon, through the moby client.
type Docker struct {
	cli  *client.Client
	opts options

	// base outlives callers: shared pulls run under it, Close cancels it.
	base   context.Context
	cancel context.CancelFunc

	pulls flight.Group[PullProgress] // by normalized reference
}

var _ Driver = (*Docker)(nil)

// Option configures a Docker driver.
type Option func(*options)

type options struct {
	host           string
	pullTimeout    time.Duration
	callTimeout    time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration
	clientOpts     []client.Opt
	logsLimitBytes int
	identityRepo   string
	identityLabels map[string]string
}

// WithHost talks to the daemon at host (e.g. "unix:///var/run/docker.sock",
// "tcp://10.0.0.5:2376") instead of the one DOCKER_HOST names.
func WithHost(host string) Option { return func(o *options) { o.host = host } }

// WithPullTimeout bounds each image pull (default DefaultPullTimeout).
func WithPullTimeout(d time.Duration) Option { return func(o *options) { o.pullTimeout = d } }

// WithCallTimeout bounds each call whose caller set no deadline (default
// DefaultCallTimeout; see Bound).
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithEventBackoff sets the delays between event stream reconnection
// attempts: the first is min, each next one doubles, up to max.
func WithEventBackoff(min, max time.Duration) Option {
	return func(o *options) { o.backoffMin, o.backoffMax = min, max }
}

// WithClientOptions passes extra options to the moby client (TLS, HTTP client, ...).
func WithClientOptions(opts ...client.Opt) Option {
	return func(o *options) { o.clientOpts = append(o.clientOpts, opts...) }
}

// New connects lazily to a Docker daemon (the environment's, unless
// WithHost says otherwise). The API version is negotiated on first use, so
// an older daemon (e.g. Docker 20.10, API 1.41) is spoken to in its version.
func New(opts ...Option) (*Docker, error) {
	o := options{
		pullTimeout:    DefaultPullTimeout,
		callTimeout:    DefaultCallTimeout,
		backoffMin:     100 * time.Millisecond,
		backoffMax:     10 * time.Second,
		logsLimitBytes: 16 << 10,
		identityRepo:   IdentityRepo,
	}
	for _, opt := range opts {
		opt(&o)
	}
	copts := []client.Opt{client.FromEnv}
	if o.host != "" {
		copts = append(copts, client.WithHost(o.host))
	}
	// FromEnv disables negotiation when DOCKER_API_VERSION pins a version;
	// that is the operator's explicit choice. Otherwise negotiate.
	copts = append(copts, o.clientOpts...)
	cli, err := client.New(copts...)
	if err != nil {
		return nil, &Error{Op: "connect", Ref: o.host, Kinds: []error{ErrInvalid}, Err: err}
	}
	base, cancel := context.WithCancel(context.Background())
	return &Docker{cli: cli, opts: o, base: base, cancel: cancel}, nil
}

// Close cancels in-flight pulls and releases the client's connections.
func (d *Docker) Close() error {
	d.cancel()
	return d.cli.Close()
}

// Ping negotiates the API version if not done yet and reports the daemon's
// versions and CPU count.
func (d *Docker) Ping(ctx context.Context) (ServerInfo, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	info, err := d.ping(ctx)
	return info, expired(err, "ping", "")
}

func (d *Docker) ping(ctx context.Context) (ServerInfo, error) {
	if _, err := d.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return ServerInfo{}, wrap("ping", "", err)
	}
	v, err := d.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return ServerInfo{}, wrap("ping", "", err)
	}
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return ServerInfo{}, wrap("ping", "", err)
	}
	return ServerInfo{
		APIVersion:    d.cli.ClientVersion(),
		ServerVersion: v.Version,
		MinAPIVersion: v.MinAPIVersion,
		OS:            v.Os,
		Arch:          v.Arch,
		NCPU:          info.Info.NCPU,
	}, nil
}

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

// Remove stops (SIGTERM, SIGKILL after stopTimeout), kills if stopping
// failed, then removes the container with its anonymous volumes.
func (d *Docker) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	ctx, cancel, expired := Bound(ctx, max(0, stopTimeout)+d.opts.callTimeout)
	defer cancel()
	return expired(d.remove(ctx, nameOrID, stopTimeout), "remove", nameOrID)
}

func (d *Docker) remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	if nameOrID == "" {
		return NewError("remove", nameOrID, ErrInvalid, errors.New("empty container name"))
	}
	// Whole seconds, rounded up; never negative, which Docker reads as "wait forever".
	secs := max(0, int((stopTimeout+time.Second-1)/time.Second))
	_, err := d.cli.ContainerStop(ctx, nameOrID, client.ContainerStopOptions{Timeout: &secs})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return wrap("remove", nameOrID, err)
		}
		// Stop can fail on a wedged container; a kill (and Force below)
		// still gets rid of it. A kill of a stopped container is a conflict.
		if _, kerr := d.cli.ContainerKill(ctx, nameOrID, client.ContainerKillOptions{}); cerrdefs.IsNotFound(kerr) {
			return nil
		}
	}
	_, err = d.cli.ContainerRemove(ctx, nameOrID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err):
		// "removal already in progress": someone else is removing it; wait
		// for it to be gone so that success means gone.
		return d.waitGone(ctx, nameOrID)
	}
	return wrap("remove", nameOrID, err)
}

func (d *Docker) waitGone(ctx context.Context, nameOrID string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := d.cli.ContainerInspect(ctx, nameOrID, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return wrap("remove", nameOrID, err)
		}
		select {
		case <-ctx.Done():
			return NewError("remove", nameOrID, ErrTimeout, fmt.Errorf("waiting for another removal to finish: %w", ctx.Err()))
		case <-tick.C:
		}
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.limit {
		b.truncated = b.truncated || len(p) > b.limit || len(b.buf) > 0
		b.buf = append(b.buf[:0], p[len(p)-b.limit:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.limit; over > 0 {
		b.truncated = true
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
