package fakedocker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// service is the container of one Sandbox service, as a manager makes it.
func service(name, uid string, script fake.Script) dd.ContainerSpec {
	return dd.ContainerSpec{Name: name, Image: testImage, OwnerLabel: host.LabelUID, Cmd: fake.Command(script),
		Labels: map[string]string{host.LabelUID: uid, host.LabelEngine: "redis"}}
}

// twoManagers are two drivers, as two managers in their own processes have,
// on one fake host.
func twoManagers(t *testing.T) (*fakedocker.Server, [2]dd.Driver, context.Context) {
	srv := serve(t, fakedocker.New(fakedocker.WithImage(testImage, fakedocker.Image{})))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return srv, [2]dd.Driver{newDriver(t, dd.WithHost(srv.Host())), newDriver(t, dd.WithHost(srv.Host()))}, ctx
}

// TestConcurrentCreatesOfOneServiceAreNoDuplicate: two managers creating the
// same service at once make one container; the name conflict turns the other
// create into an adoption, and nothing is counted as a duplicate.
func TestConcurrentCreatesOfOneServiceAreNoDuplicate(t *testing.T) {
	srv, managers, ctx := twoManagers(t)
	const rounds = 20
	for i := range rounds {
		s := service(fmt.Sprintf("svc-%d", i), fmt.Sprintf("uid-%d", i), fake.Script{Sleep: fake.Forever})
		var wg sync.WaitGroup
		ids := make([]string, len(managers))
		start := make(chan struct{})
		for m, d := range managers {
			wg.Go(func() {
				<-start
				c, err := d.CreateContainer(ctx, s)
				if err != nil {
					t.Errorf("manager %d: %v", m, err)
				}
				ids[m] = c.ID
			})
		}
		close(start)
		wg.Wait()
		if ids[0] != ids[1] {
			t.Errorf("round %d: the managers got containers %.12s and %.12s, want one", i, ids[0], ids[1])
		}
	}
	st := srv.Stats()
	if st.Creates != rounds || st.NameConflicts != rounds || st.Duplicates != 0 {
		t.Errorf("creates %d, name conflicts %d, duplicates %d; want %d, %d, 0", st.Creates, st.NameConflicts, st.Duplicates, rounds, rounds)
	}
}

// TestDuplicateCreatesAreCounted: a second live container for a service (here
// under another name, which no name conflict stops) is a duplicate; one beside
// an exited or a removed container of the service is not.
func TestDuplicateCreatesAreCounted(t *testing.T) {
	srv, managers, ctx := twoManagers(t)
	exited := service("svc-exited", "uid-1", fake.Script{Exit: 1})
	first := service("svc-first", "uid-1", fake.Script{Sleep: fake.Forever})
	second := service("svc-second", "uid-1", fake.Script{Sleep: fake.Forever})
	for _, step := range []struct {
		d    dd.Driver
		spec dd.ContainerSpec
	}{{managers[0], exited}, {managers[0], first}, {managers[1], second}} {
		if _, err := step.d.CreateContainer(ctx, step.spec); err != nil {
			t.Fatal(err)
		}
	}
	if err := managers[0].Remove(ctx, second.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := managers[1].CreateContainer(ctx, service("svc-third", "uid-1", fake.Script{Exit: 0})); err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	if st.Creates != 4 || st.Duplicates != 2 || len(st.DuplicateList) != 2 {
		t.Fatalf("creates %d, duplicates %d %+v; want 4 creates, 2 duplicates", st.Creates, st.Duplicates, st.DuplicateList)
	}
	if got := st.DuplicateList[0]; got.Name != second.Name || got.Beside != first.Name || got.Labels[host.LabelUID] != "uid-1" {
		t.Errorf("duplicate %+v: want %s beside %s, for uid-1", got, second.Name, first.Name)
	}
	if got := st.DuplicateList[1]; got.Name != "svc-third" || got.Beside != first.Name {
		t.Errorf("duplicate %+v: want svc-third beside %s", got, first.Name)
	}
	if served := statsOver(t, srv); served.Duplicates != st.Duplicates || served.Requests["POST /containers/create"] != 4 {
		t.Errorf("GET /_fake/stats = %d duplicates, %v; want %d duplicates and 4 creates requested", served.Duplicates, served.Requests, st.Duplicates)
	}
}

// statsOver reads the statistics as a benchmark does: over the daemon's socket.
func statsOver(t *testing.T, srv *fakedocker.Server) fakedocker.Stats {
	path := strings.TrimPrefix(srv.Host(), "unix://")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://fakedocker/_fake/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var st fakedocker.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRestartKeepsTheState: while down the daemon is unreachable (not empty);
// back up, it has its containers as they were.
func TestRestartKeepsTheState(t *testing.T) {
	srv, managers, ctx := twoManagers(t)
	made, err := managers[0].CreateContainer(ctx, service("svc", "uid-1", fake.Script{Sleep: fake.Forever}))
	if err != nil {
		t.Fatal(err)
	}
	srv.Down()
	if _, err := managers[1].Inspect(ctx, made.ID); !errors.Is(err, dd.ErrUnavailable) {
		t.Errorf("Inspect while down = %v, want unavailable", err)
	}
	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	got, err := managers[1].Inspect(ctx, made.ID)
	if err != nil || got.State != dd.StateRunning || got.Name != made.Name {
		t.Errorf("Inspect after the restart = %s %s, %v; want %s running", got.Name, got.State, err, made.Name)
	}
	if st := srv.Stats(); st.Downs != 1 || st.Containers["running"] != 1 {
		t.Errorf("stats %+v: want 1 down and the running container", st)
	}
}
