package capacity

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// staleReader answers every Get with the object as it was when it was made: a
// placement that read the host just before another's reservation landed.
type staleReader struct {
	client.Reader
	host *sandboxv1.DockerHost
}

func (s staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.host.DeepCopyInto(obj.(*sandboxv1.DockerHost))
	return nil
}

// Two placements racing for a host's last capacity: both saw room, and only the
// first reservation lands; the other gets a conflict, and deciding again finds
// the host full.
func TestReserveLastCapacityOnce(t *testing.T) {
	scheme := testenv.Scheme()
	h := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: "h"},
		Spec:   sandboxv1.DockerHostSpec{Endpoint: "unix:///x.sock", Capacity: &sandboxv1.DockerHostCapacity{Sandboxes: ptr.To[int32](3)}},
		Status: sandboxv1.DockerHostState{Allocated: sandboxv1.Allocation{Sandboxes: 2}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(h).WithStatusSubresource(h).Build()
	ctx := context.Background()
	seen := &sandboxv1.DockerHost{}
	if err := c.Get(ctx, client.ObjectKey{Name: "h"}, seen); err != nil {
		t.Fatal(err)
	}
	first := Request{Key: "ns/a", UID: "a", Need: Demand{Sandboxes: 1}}
	second := Request{Key: "ns/b", UID: "b", Need: Demand{Sandboxes: 1}}

	if err := Reserve(ctx, c, staleReader{Reader: c, host: seen}, "h", first); err != nil {
		t.Fatalf("the first placement: %v", err)
	}
	if err := Reserve(ctx, c, staleReader{Reader: c, host: seen}, "h", second); !apierrors.IsConflict(err) {
		t.Fatalf("the second placement, on the same read of the host: %v, want a conflict", err)
	}
	if err := Reserve(ctx, c, c, "h", second); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("the second placement, deciding again: %v, want errNoRoom", err)
	}
	got := &sandboxv1.DockerHost{}
	if err := c.Get(ctx, client.ObjectKey{Name: "h"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Reservations) != 1 || got.Status.Reservations[0].UID != "a" {
		t.Errorf("reservations %+v, want only the first placement's", got.Status.Reservations)
	}
}
