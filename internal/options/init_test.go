package options

import (
	"testing"
	"time"
)

// TestInitTimeout: a seed that asks for no total time gets 10m, or the
// operator's maximum when lower; one that asks for more than the maximum is
// refused, at the maximum it is not.
func TestInitTimeout(t *testing.T) {
	b := DefaultOptions().InitBounds()
	if got, ok := b.Timeout(nil); got != DefaultInitTimeout || !ok {
		t.Errorf("unset: %s (ok %t), want %s", got, ok, DefaultInitTimeout)
	}
	low := Options{InitMaxTimeout: 2 * time.Minute}.InitBounds()
	if got, _ := low.Timeout(nil); got != 2*time.Minute {
		t.Errorf("unset under --init-max-timeout=2m: %s, want 2m", got)
	}
	most := b.MaxTimeout
	if _, ok := b.Timeout(&most); !ok {
		t.Errorf("%s, the maximum, refused", most)
	}
	over := most + time.Second
	if _, ok := b.Timeout(&over); ok {
		t.Errorf("%s, past the maximum %s, accepted", over, most)
	}
	if zero := (Options{}).InitBounds(); zero != b {
		t.Errorf("zero options' bounds %+v, want the defaults %+v", zero, b)
	}
}
