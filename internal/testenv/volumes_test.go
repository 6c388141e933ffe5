package testenv

import (
	"slices"
	"testing"
	"time"
)

func TestLeakedVolumes(t *testing.T) {
	const settle, interval = 200 * time.Millisecond, 5 * time.Millisecond
	before := map[string]bool{"theirs": true}
	for _, tc := range []struct {
		name  string
		lists []map[string]bool // successive answers; the last repeats
		want  []string
		early bool // returns before settle
	}{
		{"none new", []map[string]bool{{"theirs": true}}, nil, true},
		{"one dangling while its container goes", []map[string]bool{{"v1": true}, {"v1": true}, {}}, nil, true},
		{"one that stays", []map[string]bool{{"v1": true, "theirs": true}}, []string{"v1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			list := func() map[string]bool {
				l := tc.lists[min(i, len(tc.lists)-1)]
				i++
				return l
			}
			start := time.Now()
			got := leaked(before, list, settle, interval)
			took := time.Since(start)
			if !slices.Equal(got, tc.want) {
				t.Errorf("leaked %v, want %v", got, tc.want)
			}
			if tc.early != (took < settle) {
				t.Errorf("returned after %s (settle %s): a leak is reported only once it has held that long, and nothing waits for it", took, settle)
			}
		})
	}
}
