package lifetime

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// An owner that left, came back (the window was cleared on the API server) and left
// again must be judged against a new window, not against the first one still in a
// stale cache.
func TestOwnerVerdictReadsThePersistedWindow(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	persisted := &sandboxv1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "back", UID: "uid-back", CreationTimestamp: created},
		Spec:       sandboxv1.SandboxSpec{AgentID: "back-1"},
	}
	stale := persisted.DeepCopy()
	stale.Status.OwnerMissingSince = &metav1.Time{Time: time.Now().Add(-30 * time.Minute).Truncate(time.Second)}

	scheme := testenv.Scheme()
	cached := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(stale.DeepCopy()).WithStatusSubresource(stale).Build()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(persisted.DeepCopy()).WithStatusSubresource(persisted).Build()
	j := Judge{Client: cached, API: api, Driver: fake.New(), Recorder: events.NewFakeRecorder(16), Options: options.DefaultOptions()}

	left, deleted, err := j.owner(context.Background(), stale)
	if err != nil || deleted {
		t.Fatalf("deleted = %v, err = %v: a Sandbox was deleted on a window its owner had already ended", deleted, err)
	}
	grace := j.Options.GracePeriod
	if left < grace-2*time.Second || left > grace+time.Second {
		t.Errorf("left = %s, want a new window of the grace period (%s)", left, grace)
	}
	if since := stale.Status.OwnerMissingSince; since == nil || time.Since(since.Time) > 2*time.Second {
		t.Errorf("ownerMissingSince = %v, want now: the owner went missing again", since)
	}
	if err := cached.Get(context.Background(), client.ObjectKeyFromObject(stale), &sandboxv1.Sandbox{}); err != nil {
		t.Errorf("the Sandbox is gone: %v", err)
	}
}
