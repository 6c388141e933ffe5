package kit

import (
	"testing"
	"time"
)

func TestSoonest(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{"nothing to wait for", nil, 0},
		{"no service has a deadline", []time.Duration{0, 0}, 0},
		{"one service's deadline", []time.Duration{5 * time.Second, 0}, 5 * time.Second},
		// A service with no deadline must not make the pass come back at once.
		{"the earliest, a service without one ignored", []time.Duration{15 * time.Second, time.Second, 0, 5 * time.Second}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Soonest(tc.in...); got != tc.want {
				t.Errorf("soonest(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
