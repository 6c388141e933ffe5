package testenv

import (
	"context"
	"time"

	"github.com/moby/moby/client"
)

// DanglingVolumes lists the Docker engine's dangling volumes: those no container
// uses. Only these can be a test's leaks: tests of other packages run beside it on
// the same engine and hold volumes of their own.
func DanglingVolumes(t T) map[string]bool {
	t.Helper()
	list, done := danglingLister(t)
	defer done()
	return list()
}

// NoVolumesLeaked fails the test (and goes on) if volumes dangle now that did not
// in before, an earlier DanglingVolumes. It looks for up to 30 s: a volume dangles
// while its container is being removed, and that is not a leak; on a loaded
// machine (load 37 beside a build) the engine took longer than 3 s. A leak
// stays, so the longer window costs a passing run nothing.
func NoVolumesLeaked(t T, before map[string]bool) {
	t.Helper()
	list, done := danglingLister(t)
	defer done()
	if left := leaked(before, list, 30*time.Second, 250*time.Millisecond); len(left) > 0 {
		t.Errorf("volumes left behind: %v", left)
	}
}

// danglingLister connects to the engine: list lists its dangling volumes, done
// disconnects.
func danglingLister(t T) (list func() map[string]bool, done func()) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatalf("a Docker client: %v", err)
		return func() map[string]bool { return nil }, func() {}
	}
	return func() map[string]bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: client.Filters{}.Add("dangling", "true")})
		if err != nil {
			t.Fatalf("listing dangling volumes: %v", err)
			return nil
		}
		out := map[string]bool{}
		for _, v := range res.Items {
			out[v.Name] = true
		}
		return out
	}, func() { _ = cli.Close() }
}

// leaked polls list until it names no volume outside before, or settle has passed.
func leaked(before map[string]bool, list func() map[string]bool, settle, interval time.Duration) []string {
	var out []string
	for end := time.Now().Add(settle); ; time.Sleep(interval) {
		out = out[:0]
		for v := range list() {
			if !before[v] {
				out = append(out, v)
			}
		}
		if len(out) == 0 || time.Now().After(end) {
			return out
		}
	}
}
