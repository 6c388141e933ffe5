package lifetime

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func TestOwnerDeadline(t *testing.T) {
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const grace = 5 * time.Minute
	for _, tc := range []struct {
		name  string
		since time.Time // ownerMissingSince
		want  time.Time
	}{
		{"owner gone long after the Sandbox was made: grace after it went",
			created.Add(time.Hour), created.Add(time.Hour + grace)},
		{"owner missing from the Sandbox's first second: a whole grace period from creation",
			created, created.Add(grace)},
		{"a missing-since older than the Sandbox (status carried over) does not shorten its grace",
			created.Add(-time.Hour), created.Add(grace)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
			if got := ownerDeadline(sb, tc.since, grace); !got.Equal(tc.want) {
				t.Errorf("deadline %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCeilSecond: ownerMissingSince is persisted in whole seconds; rounding the
// first observation down would delete the Sandbox up to a second early.
func TestCeilSecond(t *testing.T) {
	sec := time.Date(2025, 3, 1, 12, 0, 7, 0, time.UTC)
	for _, tc := range []struct {
		in, want time.Time
	}{
		{sec, sec},
		{sec.Add(time.Nanosecond), sec.Add(time.Second)},
		{sec.Add(500 * time.Millisecond), sec.Add(time.Second)},
		{sec.Add(time.Second - time.Nanosecond), sec.Add(time.Second)},
	} {
		if got := ceilSecond(tc.in); !got.Equal(tc.want) {
			t.Errorf("ceilSecond(%s) = %s, want %s", tc.in.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), tc.want.Format(time.RFC3339))
		}
	}
}

func TestWithOwnerDeadline(t *testing.T) {
	plain := errors.New("updating status: connection refused")
	terminal := fmt.Errorf("invalid spec: %w", reconcile.TerminalError(errors.New("unknown engine cassandra")))
	after := func(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
	for _, tc := range []struct {
		name      string
		result    ctrl.Result
		err       error
		ownerLeft time.Duration
		want      ctrl.Result
		wantErr   error
	}{
		{"owner running: the pass's result as it is", after(time.Second), nil, 0, after(time.Second), nil},
		{"owner running, terminal error: stays terminal", ctrl.Result{}, terminal, 0, ctrl.Result{}, terminal},
		{"nothing else to wait for: back at the deadline", ctrl.Result{}, nil, time.Minute, after(time.Minute), nil},
		{"a sooner retry stays", after(time.Second), nil, time.Minute, after(time.Second), nil},
		{"a later resync yields to the deadline", after(time.Hour), nil, time.Minute, after(time.Minute), nil},
		{"a plain error is retried with backoff, sooner than the deadline", ctrl.Result{}, plain, time.Minute, ctrl.Result{}, plain},
		// A terminal error would end retries and let a stalled Sandbox outlive its owner.
		{"a terminal error gives way to the deadline", after(time.Second), terminal, time.Minute, after(time.Minute), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WithOwnerDeadline(tc.result, tc.err, tc.ownerLeft)
			if got != tc.want || !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("got %+v, %v; want %+v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
