// Package apiclock is the API server's clock as this process reads it: this
// process's clock, corrected by the skew last measured against the API server.
// Times the API server writes (creationTimestamp) and those other replicas
// write (status.ownerMissingSince) are compared with a now of that clock, so
// that a replica whose clock runs ahead does not end a Sandbox's ttl or its
// owner's grace period early.
package apiclock

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// MeasureEvery is how often the skew is measured again.
const MeasureEvery = 5 * time.Minute

// Clock is the API server's clock.
type Clock struct {
	// local is this process's clock (time.Now; tests run it ahead or behind).
	local func() time.Time
	// skew is the API server's time minus this process's, in nanoseconds.
	skew atomic.Int64
}

// New is a clock reading local (nil: time.Now), with no skew until measured.
func New(local func() time.Time) *Clock {
	if local == nil {
		local = time.Now
	}
	return &Clock{local: local}
}

// Now is the API server's time, as last measured.
func (c *Clock) Now() time.Time { return c.local().Add(c.Skew()) }

// Until is how long until t, on the API server's clock.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Skew is the API server's time minus this process's, as last measured.
func (c *Clock) Skew() time.Duration { return time.Duration(c.skew.Load()) }

// Measure reads the API server's Date header (whole seconds) on a request to
// /version, which every client may read. The skew it can prove lies between
// the header's second at the request's end and its next second at the start:
// when no skew is one of those, none is taken (clocks that agree to within the
// measurement stay as they are); else the smallest, so that the corrected clock
// never runs ahead of the API server's: a window judged on it ends late by at
// most a second and the round trip, never early.
func (c *Clock) Measure(ctx context.Context, cfg *rest.Config) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
	if err != nil {
		return err
	}
	before := c.local()
	resp, err := hc.Do(req)
	after := c.local()
	if err != nil {
		return fmt.Errorf("reading the API server's time: %w", err)
	}
	_ = resp.Body.Close()
	server, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return fmt.Errorf("reading the API server's time: its Date header %q: %w", resp.Header.Get("Date"), err)
	}
	lo, hi := server.Sub(after), server.Add(time.Second).Sub(before)
	skew := lo
	if lo <= 0 && hi >= 0 {
		skew = 0
	}
	c.skew.Store(int64(skew))
	return nil
}

// Run measures the skew every MeasureEvery until ctx ends (a manager.Runnable
// on every replica: each has its own clock).
func (c *Clock) Run(cfg *rest.Config) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		log := logf.FromContext(ctx).WithName("apiclock")
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(MeasureEvery):
			}
			if err := c.Measure(ctx, cfg); err != nil {
				log.Error(err, "Measuring the skew against the API server's clock; keeping the last one", "skew", c.Skew())
			}
		}
	}
}
