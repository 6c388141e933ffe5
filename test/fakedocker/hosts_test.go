package fakedocker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// TestHosts: hosts started together are distinct daemons, each on its own
// socket; the control endpoint sums their statistics and takes one down and
// up again without touching the others.
func TestHosts(t *testing.T) {
	dir, err := os.MkdirTemp("", "fdh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	hosts, err := fakedocker.StartHosts(dir, 3, fakedocker.WithPullAny())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hosts.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	drivers := make([]dd.Driver, len(hosts))
	for i, h := range hosts {
		drivers[i] = newDriver(t, dd.WithHost(h.Host()))
		if err := drivers[i].PullImage(ctx, testImage, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := drivers[i].CreateContainer(ctx, service("svc", "uid-1", fake.Script{Sleep: fake.Forever})); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := hosts[0].Stats().DaemonID, hosts[1].Stats().DaemonID; a == b {
		t.Errorf("two hosts share the daemon ID %s", a)
	}
	control := httptest.NewServer(hosts.Control())
	defer control.Close()
	post := func(path string) {
		resp, err := http.Post(control.URL+path, "", nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST %s = %v, %v", path, resp, err)
		}
		_ = resp.Body.Close()
	}
	post("/hosts/1/down")
	if _, err := drivers[1].Inspect(ctx, "svc"); !errors.Is(err, dd.ErrUnavailable) {
		t.Errorf("Inspect on the host taken down = %v, want unavailable", err)
	}
	if _, err := drivers[0].Inspect(ctx, "svc"); err != nil {
		t.Errorf("Inspect on another host = %v", err)
	}
	post("/hosts/1/up")
	if _, err := drivers[1].Inspect(ctx, "svc"); err != nil {
		t.Errorf("Inspect on the host back up = %v", err)
	}
	resp, err := http.Get(control.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var sum fakedocker.Summary
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		t.Fatal(err)
	}
	if sum.Creates != 3 || sum.Duplicates != 0 || sum.Downs != 1 || len(sum.Hosts) != 3 || sum.Requests["POST /images/create"] != 3 {
		t.Errorf("summary: %d creates, %d duplicates, %d downs, %d hosts, %v; want 3, 0, 1, 3 and 3 pulls",
			sum.Creates, sum.Duplicates, sum.Downs, len(sum.Hosts), sum.Requests)
	}
}

// TestLive counts one namespace's live service containers over every host, and
// the Sandboxes they serve.
func TestLive(t *testing.T) {
	dir, err := os.MkdirTemp("", "fdl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	hosts, err := fakedocker.StartHosts(dir, 2, fakedocker.WithPullAny())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hosts.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		host          int
		name, ns, uid string
	}{{0, "a1", "a", "uid-1"}, {0, "a2", "a", "uid-2"}, {1, "a2-pg", "a", "uid-2"}, {1, "b3", "b", "uid-3"}} {
		d := newDriver(t, dd.WithHost(hosts[c.host].Host()))
		if err := d.PullImage(ctx, testImage, nil); err != nil {
			t.Fatal(err)
		}
		spec := service(c.name, c.uid, fake.Script{Sleep: fake.Forever})
		spec.Labels[host.LabelNamespace] = c.ns
		if _, err := d.CreateContainer(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := hosts.Live("a"), (fakedocker.Live{Containers: 3, Sandboxes: 2}); got != want {
		t.Errorf("Live(a) = %+v, want %+v", got, want)
	}
}
