package wait_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/fake"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/api/wait"
)

func TestReady(t *testing.T) {
	withCondition := func(sb *sandboxv1.Sandbox, typ, reason string) *sandboxv1.Sandbox {
		sb = sb.DeepCopy()
		sb.Status.ObservedGeneration = sb.Generation
		sb.Status.Conditions = []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: reason,
			Message: "what to change", ObservedGeneration: sb.Generation}}
		return sb
	}
	for _, tc := range []struct {
		name  string
		check func(got *sandboxv1.Sandbox, err error) bool
	}{
		{"ready", func(got *sandboxv1.Sandbox, err error) bool { return err == nil && sandboxv1.IsReady(got) }},
		{"stalled", func(_ *sandboxv1.Sandbox, err error) bool {
			return err != nil && strings.Contains(err.Error(), "stalled (InvalidSpec): what to change")
		}},
		{"deleted", func(_ *sandboxv1.Sandbox, err error) bool { return apierrors.IsNotFound(err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "be", UID: "u1", Generation: 1}}
			cs := seeded(t, sb)
			sandboxes := cs.SandboxV1alpha1().Sandboxes("agents")
			go func() {
				time.Sleep(100 * time.Millisecond) // after the wait's first list
				ctx := context.Background()
				switch tc.name {
				case "ready":
					_, _ = sandboxes.Update(ctx, withCondition(sb, sandboxv1.ConditionReady, "Ready"), metav1.UpdateOptions{})
				case "stalled":
					_, _ = sandboxes.Update(ctx, withCondition(sb, sandboxv1.ConditionStalled, "InvalidSpec"), metav1.UpdateOptions{})
				case "deleted":
					_ = sandboxes.Delete(ctx, "be", metav1.DeleteOptions{})
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := wait.Ready(ctx, cs, sb)
			if !tc.check(got, err) {
				t.Errorf("Ready = %v, %v", got, err)
			}
		})
	}
	t.Run("times out with the last reason", func(t *testing.T) {
		sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "be", UID: "u1", Generation: 1}}
		sb.Status.ObservedGeneration = 1
		sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: "Provisioning", Message: "postgres: probing", ObservedGeneration: 1}}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := wait.Ready(ctx, seeded(t, sb), sb)
		if err == nil || !strings.Contains(err.Error(), "Provisioning: postgres: probing") {
			t.Errorf("err = %v", err)
		}
	})
}

// seeded is a fake clientset's Sandboxes holding sb. Note: created through the
// typed client, since objects given to the constructor land under the guessed
// resource "sandboxs", where the typed client never looks; and the simple
// clientset, since NewClientset's server-side-apply tracker needs OpenAPI
// schemas of the types.
func seeded(t *testing.T, sb *sandboxv1.Sandbox) *fake.Clientset {
	t.Helper()
	cs := fake.NewSimpleClientset()
	if _, err := cs.SandboxV1alpha1().Sandboxes(sb.Namespace).Create(context.Background(), sb.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestData: Data returns once status.data reports the request finished, even
// when every watch fails (the informer lists again); when ctx ends first it
// returns the last version seen, whose message says what the request awaits.
func TestData(t *testing.T) {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "be", UID: "uid-1"}}
	finished := sb.DeepCopy()
	finished.Status.Data = &sandboxv1.DataRequestStatus{ID: "reset-1", Action: sandboxv1.DataReset, Phase: sandboxv1.DataFailed}
	cs := seeded(t, finished)
	cs.PrependWatchReactor("sandboxes", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(1, false)
		w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		return true, w, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := wait.Data(ctx, cs, sb, "reset-1")
	if err != nil || got.Status.Data == nil || got.Status.Data.Phase != sandboxv1.DataFailed {
		t.Errorf("Data of a finished request = %+v, %v", got, err)
	}

	// The same id, asked again with another action: the status judged before
	// that write is the earlier request's.
	asked := sb.DeepCopy()
	asked.Generation = 3
	stale := asked.DeepCopy()
	stale.Status.Data = &sandboxv1.DataRequestStatus{ID: "d1", Action: sandboxv1.DataCheckpoint, ObservedGeneration: 2, Phase: sandboxv1.DataSucceeded}
	early, cancelEarly := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelEarly()
	if got, err := wait.Data(early, seeded(t, stale), asked, "d1"); err == nil {
		t.Errorf("Data returned an earlier request's status under the same id: %+v", got.Status.Data)
	}

	running := sb.DeepCopy()
	running.Status.Data = &sandboxv1.DataRequestStatus{ID: "reset-2", Phase: sandboxv1.DataRunning, Message: "waiting for postgres (not ready)"}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	got, err = wait.Data(short, seeded(t, running), sb, "reset-2")
	if err == nil || got == nil || got.Status.Data == nil || got.Status.Data.Message != "waiting for postgres (not ready)" {
		t.Errorf("Data past its deadline = %+v, %v; want the last version seen and an error", got, err)
	}
}
