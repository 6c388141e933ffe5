package claim

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// A claim record whose write was under way when the replica gave the host up
// (its Lease lost, then regained) is not remembered as recent: another
// replica may have recorded another member for the service meanwhile, and a
// remembered record wins over the status.
func TestRecentForgetsAWriteFromBeforeAReset(t *testing.T) {
	ctx := context.Background()
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	rc := &Recent{}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(sb).WithStatusSubresource(sb).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			rc.Reset() // the Lease lost while the write is in flight
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	if err := rc.Write(ctx, c, sb, map[string]Record{"redis": {ID: "m1", Credentials: "h"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := rc.Of(sb); len(got) != 0 {
		t.Errorf("a record written across a reset is remembered: %v", got)
	}

	plain := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(sb.DeepCopy()).WithStatusSubresource(sb).Build()
	if err := rc.Write(ctx, plain, sb, map[string]Record{"redis": {ID: "m2", Credentials: "h"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := rc.Of(sb); got["redis"].ID != "m2" {
		t.Errorf("a record written after the reset is not remembered: %v", got)
	}
}
