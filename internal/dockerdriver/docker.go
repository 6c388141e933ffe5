package dockerdriver

import (
	"context"
	"time"

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
	left  leftExecs                  // execs left running, by container
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
		MemTotal:      info.Info.MemTotal,
	}, nil
}
