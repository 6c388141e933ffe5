package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
)

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{TimeoutError("pull", "localhost:5001/x:1", 300*time.Second, ErrPullFailed),
			"pull localhost:5001/x:1: timeout after 300s: context deadline exceeded"},
		{TimeoutError("exec", "pg [pg_isready]", 1500*time.Millisecond), "exec pg [pg_isready]: timeout after 1.5s: context deadline exceeded"},
		{BusyError("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef [mongosh]",
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "mongosh", "timed out after 10s"),
			"exec 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef [mongosh]: container 0123456789ab is busy: " +
				"an earlier exec of mongosh timed out after 10s and is still running in it; not starting another until it ends"},
		{&Error{}, "docker: failed"},
		{&Error{Op: "ping", Kinds: []error{ErrUnavailable}}, "ping: docker unavailable"},
		{&Error{Op: "inspect", Ref: "x1", Err: errors.New("")}, "inspect x1: *errors.errorString with no message"},
		{wrap("list", "", context.DeadlineExceeded), "list: context deadline exceeded"},
		{&ConflictError{Name: "pg-a", OwnerLabel: "uid", Want: "u1", Existing: Container{ID: "0123456789abcdef", Labels: map[string]string{"uid": "u2"}}},
			`create pg-a: conflict: the name is taken by container 0123456789ab, which is not ours (its uid is "u2", want "u1")`},
		{&ConflictError{Name: "pg-a", OwnerLabel: "uid", Want: "u1", Existing: Container{ID: "abc"}},
			`create pg-a: conflict: the name is taken by container abc, which is not ours (it has no uid label, want "u1")`},
		{&ConflictError{Name: "pg-b", From: "pg-a", Existing: Container{ID: "0123456789abcdef"}},
			`rename pg-a to pg-b: conflict: the name is taken by container 0123456789ab`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestWrapKinds(t *testing.T) {
	for _, tc := range []struct {
		in   error
		kind error // nil: none of ours
	}{
		{cerrdefs.ErrNotFound.WithMessage("No such container: x"), ErrNotFound},
		{cerrdefs.ErrConflict.WithMessage("name in use"), ErrConflict},
		{cerrdefs.ErrInvalidArgument.WithMessage("bad"), ErrInvalid},
		{cerrdefs.ErrUnavailable, ErrUnavailable},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), ErrUnavailable},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ErrTimeout},
		{context.Canceled, nil},
		{errors.New("something else"), nil},
		// What a dead container answers to every removal after a daemon restart
		// during its exit left its overlay mounted (a 500: the words decide).
		{cerrdefs.ErrInternal.WithMessage(`driver "overlay2" failed to remove root filesystem: unlinkat /var/lib/docker/overlay2/0a1b/merged: device or resource busy`), ErrRemovalStuck},
		{errors.New("unable to remove filesystem for 0a1b2c: remove /var/lib/docker/containers/0a1b2c/shm: device or resource busy"), ErrRemovalStuck},
	} {
		err := wrap("op", "ref", tc.in)
		if !errors.Is(err, tc.in) {
			t.Errorf("wrap(%v) lost its cause", tc.in)
		}
		for _, k := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrUnavailable, ErrTimeout, ErrRemovalStuck} {
			want := k == tc.kind //nolint:errorlint // which sentinel tc names, by identity; not an error check
			if got := errors.Is(err, k); got != want {
				t.Errorf("wrap(%v): errors.Is(%v) = %v, want %v", tc.in, k, got, want)
			}
		}
	}
	// Errors of this package pass through unchanged.
	ce := &ConflictError{Name: "x"}
	if wrap("create", "x", ce) != ce { //nolint:errorlint // identity is the point: the same error, not a wrapper
		t.Errorf("wrap re-wrapped a *ConflictError")
	}
}

func TestPullStreamError(t *testing.T) {
	// Docker 20.10 sends in-stream errors without a code.
	err := pullStreamError(&jsonstream.Error{Message: "manifest for x:1 not found: manifest unknown"})
	if !cerrdefs.IsNotFound(err) || err.Error() != "manifest for x:1 not found: manifest unknown" {
		t.Errorf("got %v (not found: %v)", err, cerrdefs.IsNotFound(err))
	}
	if err := pullStreamError(&jsonstream.Error{}); err.Error() == "" || cerrdefs.IsNotFound(err) {
		t.Errorf("empty in-stream error became %q", err)
	}
}

func TestTailBuffer(t *testing.T) {
	for _, tc := range []struct {
		writes    []string
		want      string
		truncated bool
	}{
		{[]string{"ab", "cd"}, "abcd", false},
		{[]string{"abc", "def"}, "cdef", true},
		{[]string{"abcdefgh"}, "efgh", true},
		{[]string{"ab", "cdefgh"}, "efgh", true},
		{[]string{"abcd"}, "abcd", false},
	} {
		b := newTailBuffer(4)
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if b.String() != tc.want || b.truncated != tc.truncated {
			t.Errorf("%q: got %q truncated %v, want %q %v", tc.writes, b.String(), b.truncated, tc.want, tc.truncated)
		}
	}
}

func TestPullTracker(t *testing.T) {
	tr := newPullTracker("x:1")
	for _, m := range []jsonstream.Message{
		{Status: "Pulling from x", ID: "1"},
		{Status: "Pulling fs layer", ID: "aaa"},
		{Status: "Already exists", ID: "bbb"},
		{Status: "Downloading", ID: "aaa", Progress: &jsonstream.Progress{Current: 10, Total: 100}},
		{Status: "Download complete", ID: "aaa"},
		{Status: "Extracting", ID: "aaa", Progress: &jsonstream.Progress{Current: 50, Total: 100}},
		{Status: "Pull complete", ID: "aaa"},
		{Status: "Digest: sha256:0"},
	} {
		tr.update(m)
	}
	want := PullProgress{Ref: "x:1", Layers: 2, LayersDone: 2, BytesDone: 100, BytesTotal: 100, Status: "Digest: sha256:0"}
	if got := tr.snapshot(); got != want {
		t.Errorf("snapshot %+v, want %+v", got, want)
	}
}

func TestFromMessage(t *testing.T) {
	e := fromMessage(events.Message{
		Type: events.ContainerEventType, Action: events.ActionDie, TimeNano: 1_700_000_000_123_456_789,
		Actor: events.Actor{ID: "abc", Attributes: map[string]string{
			"name": "pg-a", "image": "postgres:16", "exitCode": "137", "sandbox.roboco.io/uid": "u1",
		}},
	})
	if e.Type != EventDie || e.ID != "abc" || e.Name != "pg-a" || e.ExitCode != 137 ||
		len(e.Labels) != 1 || e.Labels["sandbox.roboco.io/uid"] != "u1" || e.Time.UnixNano() != 1_700_000_000_123_456_789 {
		t.Errorf("fromMessage = %+v", e)
	}
}

func TestFromMessageRename(t *testing.T) {
	e := fromMessage(events.Message{
		Type: events.ContainerEventType, Action: events.ActionRename, TimeNano: 1,
		Actor: events.Actor{ID: "abc", Attributes: map[string]string{
			"name": "pg-b", "oldName": "/pg-a", "image": "postgres:16", "sandbox.roboco.io/uid": "u1",
		}},
	})
	if e.Type != EventRename || e.Name != "pg-b" || e.OldName != "pg-a" || len(e.Labels) != 1 || e.Labels["sandbox.roboco.io/uid"] != "u1" {
		t.Errorf("fromMessage = %+v, want a rename of pg-a to pg-b with one label", e)
	}
}

func TestValidate(t *testing.T) {
	ok := ContainerSpec{Name: "pg-a", Image: "postgres:16", OwnerLabel: "uid", Labels: map[string]string{"uid": "u1"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.Aliases = []string{"db"}
	if err := bad.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "network") {
		t.Errorf("aliases without network: %v", err)
	}
}

func TestStateAlive(t *testing.T) {
	for s, want := range map[State]bool{
		StateRunning: true, StatePaused: true, StateRestarting: true,
		StateCreated: false, StateExited: false, StateDead: false, StateRemoving: false,
	} {
		if got := s.Alive(); got != want {
			t.Errorf("%s.Alive() = %v, want %v", s, got, want)
		}
	}
}
