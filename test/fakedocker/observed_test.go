package fakedocker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// TestObserved: a container counts as looked at once a client inspected it or
// listed it by its Sandbox UID, not when a list of every container returned it;
// the control endpoint sums the hosts'.
func TestObserved(t *testing.T) {
	srv := serve(t, fakedocker.New(fakedocker.WithImage(testImage, fakedocker.Image{})))
	d := newDriver(t, dd.WithHost(srv.Host()))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ids := map[string]string{}
	for _, uid := range []string{"uid-1", "uid-2", "uid-3"} {
		c, err := d.CreateContainer(ctx, service("svc-"+uid, uid, fake.Script{Sleep: fake.Forever}))
		if err != nil {
			t.Fatal(err)
		}
		ids[uid] = c.ID
	}
	since := time.Now()
	if got := srv.Observed(since); got != (fakedocker.Observed{Containers: 3}) {
		t.Fatalf("before any look: %+v, want 3 containers, none observed", got)
	}
	if _, err := d.List(ctx, map[string]string{"roboco.sandbox": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.List(ctx, map[string]string{host.LabelUID: "uid-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(ctx, ids["uid-3"]); err != nil {
		t.Fatal(err)
	}
	if got := srv.Observed(since); got != (fakedocker.Observed{Containers: 3, Observed: 2}) {
		t.Errorf("after a list of all, a list by uid-1 and an inspect of uid-3's: %+v, want 2 of 3 observed", got)
	}
	if got := srv.Observed(time.Now()); got.Observed != 0 {
		t.Errorf("since now: %d observed, want none", got.Observed)
	}

	control := httptest.NewServer(fakedocker.Hosts{srv}.Control())
	defer control.Close()
	resp, err := http.Get(control.URL + "/observed?since=" + since.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var got fakedocker.Observed
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got != (fakedocker.Observed{Containers: 3, Observed: 2}) {
		t.Errorf("GET /observed: %+v, want 2 of 3 observed", got)
	}
}
