package options

import (
	"cmp"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// DefaultInitTimeout is a seed's total time when its service sets no
// init.timeout (capped by InitMaxTimeout).
const DefaultInitTimeout = 10 * time.Minute

// InitBounds are the init scripts' bounds, defaults filled in.
type InitBounds struct {
	// PerScript bounds each script (--init-script-timeout).
	PerScript time.Duration
	// MaxBytes bounds one service's scripts together (--init-max-bytes).
	MaxBytes int64
	// MaxScripts bounds the keys of one ConfigMap or Secret (--init-max-scripts).
	MaxScripts int
	// MaxTimeout is the longest total time a seed may ask (--init-max-timeout).
	MaxTimeout time.Duration
}

// InitBounds are the init scripts' bounds: zero or less is the default.
func (o Options) InitBounds() InitBounds {
	b := InitBounds{PerScript: o.InitScriptTimeout, MaxBytes: o.InitMaxBytes, MaxScripts: o.InitMaxScripts, MaxTimeout: o.InitMaxTimeout}
	if b.PerScript <= 0 {
		b.PerScript = 60 * time.Second
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = 1 << 20
	}
	if b.MaxScripts <= 0 {
		b.MaxScripts = 64
	}
	if b.MaxTimeout <= 0 {
		b.MaxTimeout = 30 * time.Minute
	}
	return b
}

// Timeout is the seed's total time for a service that asks for asked (nil:
// none): the default when unset, capped by MaxTimeout; ok is false when it
// asks for more than MaxTimeout.
func (b InitBounds) Timeout(asked *time.Duration) (total time.Duration, ok bool) {
	if asked == nil {
		return min(DefaultInitTimeout, b.MaxTimeout), true
	}
	return *asked, *asked <= b.MaxTimeout
}

// validateInit reports init bounds that cannot work (zero is the default).
func (o Options) validateInit(bad func(format string, args ...any)) {
	if o.InitMaxScripts < 0 {
		bad("--init-max-scripts must be at least 1, such as 64, not %d", o.InitMaxScripts)
	}
	if o.SeedLanes < 0 || o.SeedLanesPerNamespace < 0 {
		bad("--%s and --%s must be at least 1, not %d and %d", lanes.PerHostFlag, lanes.PerNamespaceFlag, o.SeedLanes, o.SeedLanesPerNamespace)
	} else if err := lanes.Validate(o.SeedLaneCaps()); err != nil {
		bad("%v", err)
	}
	if o.InitMaxTimeout < 0 {
		bad("--init-max-timeout must be a positive duration such as 30m, not %s", o.InitMaxTimeout)
	}
}

// SeedLaneCaps are the seed lanes of a Docker host and of one namespace
// there, defaults filled in (a per-namespace default above the host's is the
// host's).
func (o Options) SeedLaneCaps() (perHost, perNamespace int) {
	perHost = cmp.Or(o.SeedLanes, lanes.DefaultPerHost)
	return perHost, cmp.Or(o.SeedLanesPerNamespace, min(lanes.DefaultPerNamespace, perHost))
}
