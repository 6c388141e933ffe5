package dockerdriver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stubExecDaemon answers exec inspects only: IDs that start with "running" run,
// others are gone (404, as after their container was removed).
func stubExecDaemon(t *testing.T) *Docker {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutSuffix(r.URL.Path, "/json")
		_, id, _ := strings.Cut(rest, "/exec/")
		status, body := http.StatusOK, fmt.Sprintf(`{"ID":%q,"Running":true}`, id)
		switch {
		case !ok || id == "":
			status, body = http.StatusNotImplemented, `{"message":"not in this stub"}`
		case !strings.HasPrefix(id, "running"):
			status, body = http.StatusNotFound, fmt.Sprintf(`{"message":"No such exec instance: %s"}`, id)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body) // a failed write fails the client's call, which the test checks
	}))
	t.Cleanup(srv.Close)
	d, err := New(WithHost("tcp://" + srv.Listener.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func TestLeftExecsRefuseWhileRunningAndForgetWhenGone(t *testing.T) {
	d := stubExecDaemon(t)
	ctx := t.Context()
	d.leave("c1", leftExec{id: "running-1", program: "mongosh", why: "timed out after 10s"})
	d.leave("c2", leftExec{id: "gone-2", program: "mongosh", why: "timed out after 10s"})

	err := d.refuseBusy(ctx, "c1", "c1 [mongosh]")
	want := "exec c1 [mongosh]: container c1 is busy: an earlier exec of mongosh timed out after 10s and is still running in it; not starting another until it ends"
	if !errors.Is(err, ErrBusy) || err.Error() != want {
		t.Errorf("refuseBusy(c1) = %v, want %q", err, want)
	}
	if err := d.refuseBusy(ctx, "c2", "c2 [mongosh]"); err != nil {
		t.Errorf("refuseBusy(c2), its exec gone = %v, want nil", err)
	}
	if _, ok := d.left.get("c2"); ok {
		t.Error("c2's gone exec is still remembered")
	}
	if _, ok := d.left.get("c1"); !ok {
		t.Error("c1's running exec was forgotten")
	}
}

// Containers removed out of band are never exec'd again: their left execs are
// forgotten when the memory grows, and the running ones kept.
func TestLeftExecsPrune(t *testing.T) {
	d := stubExecDaemon(t)
	for i := range leftExecsPruneMin - 1 {
		d.leave(fmt.Sprint("gone-c", i), leftExec{id: fmt.Sprint("gone-", i)})
	}
	d.leave("running-c", leftExec{id: "running-x"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.left.mu.Lock()
		n, pruning, at := len(d.left.m), d.left.pruning, d.left.pruneAt
		d.left.mu.Unlock()
		if !pruning && n == 1 {
			if _, ok := d.left.get("running-c"); !ok || at != 2 {
				t.Errorf("after the prune: running-c kept %v, next prune at %d; want kept, at 2", ok, at)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left execs: %d, pruning %v; want the running one only", n, pruning)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
