package testenv

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// proxied starts a stand-in engine answering "ok <path>", and a counting proxy in
// front of it; the client talks to the proxy's socket as the driver would.
func proxied(t *testing.T) (*DockerCalls, *http.Client) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	t.Cleanup(engine.Close)
	calls := CountDockerCalls(t, "tcp://"+engine.Listener.Addr().String())
	socket := strings.TrimPrefix(calls.Host, "unix://")
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	t.Cleanup(c.CloseIdleConnections)
	return calls, c
}

func call(t *testing.T, c *http.Client, method, path string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://docker"+path, nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	if p, _, _ := strings.Cut(path, "?"); method != http.MethodHead && string(body) != "ok "+p {
		t.Errorf("%s %s reached the engine as %q", method, path, body)
	}
}

func TestDockerCallsCountWhatReachesTheEngine(t *testing.T) {
	calls, c := proxied(t)
	call(t, c, "GET", "/v1.47/containers/json")
	call(t, c, "POST", "/v1.47/containers/create")
	call(t, c, "GET", "/v1.47/containers/3f2a/json")
	call(t, c, "GET", "/v1.47/containers/9c1b/json")
	call(t, c, "DELETE", "/v1.47/containers/9c1b")
	call(t, c, "HEAD", "/_ping")
	call(t, c, "GET", "/v1.47/events")

	got := calls.Snapshot()
	want := Calls{"GET /containers/json": 1, "POST /containers/create": 1, "GET /containers/{id}/json": 2,
		"DELETE /containers/{id}": 1, "HEAD /_ping": 1, "GET /events": 1}
	if len(got) != len(want) {
		t.Fatalf("counted %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s counted %d times, want %d (all: %v)", k, got[k], v, got)
		}
	}
	// The event stream and version negotiation are the driver's upkeep, not work asked of the engine.
	if got.Total() != 5 {
		t.Errorf("total %d, want the 5 calls besides upkeep", got.Total())
	}
	if per := got.Per(2); per != "DELETE /containers/{id} ×0.5, GET /containers/json ×0.5, GET /containers/{id}/json ×1.0, POST /containers/create ×0.5" {
		t.Errorf("per pass: %s", per)
	}

	calls.Reset()
	call(t, c, "GET", "/v1.47/containers/json")
	if got := calls.Snapshot(); len(got) != 1 || got["GET /containers/json"] != 1 {
		t.Errorf("after Reset counted %v, want only the call since", got)
	}
}

func TestCountDockerCallsRefusesAnUnknownHost(t *testing.T) {
	r := &recorder{T: t}
	if CountDockerCalls(r, "ssh://somewhere"); !strings.Contains(r.failure, "ssh://somewhere") {
		t.Errorf("an ssh:// engine: failure %q, want one naming the host", r.failure)
	}
}

func TestDockerCallsTraceRecordsRequestsBetweenTraceAndTraced(t *testing.T) {
	calls, c := proxied(t)
	call(t, c, "GET", "/v1.47/containers/before/json")
	calls.Trace()
	start := time.Now()
	call(t, c, "POST", "/v1.47/containers/3f2a/rename")
	call(t, c, "GET", "/v1.47/containers/json?all=1")
	got := calls.Traced()
	call(t, c, "GET", "/v1.47/containers/after/json")

	if len(got) != 2 || got[0].Method != "POST" || got[0].Path != "/v1.47/containers/3f2a/rename" ||
		got[1].Method != "GET" || got[1].Path != "/v1.47/containers/json" || got[1].Query != "all=1" {
		t.Fatalf("traced %+v, want the rename then the list, paths and query as sent", got)
	}
	if got[0].At.Before(start) || got[1].At.Before(got[0].At) || got[0].Took <= 0 {
		t.Errorf("traced times %+v: want them in order, after Trace, each with a duration", got)
	}
	if again := calls.Traced(); len(again) != 2 {
		t.Errorf("a second Traced returned %d requests, want the same 2 (nothing recorded after the first)", len(again))
	}
}

// A request whose answer the client holds is in the trace, even when Traced
// follows at once (repeated: the proxy's bookkeeping after it passes an answer
// on races the client).
func TestDockerCallsTraceHoldsEveryAnsweredRequest(t *testing.T) {
	calls, c := proxied(t)
	for i := range 300 {
		calls.Trace()
		call(t, c, "GET", "/v1.47/containers/json")
		call(t, c, "HEAD", "/_ping")
		if got := calls.Traced(); len(got) != 2 || got[0].Took <= 0 || got[1].Took <= 0 {
			t.Fatalf("round %d: traced %+v, want the list and the ping the client was answered, each with a duration", i, got)
		}
	}
}
