package kit

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchStatus writes obj's status through the status subresource, as a merge
// patch against before, and only when it changed; an object gone meanwhile is no
// error. client.MergeFromWithOptimisticLock{} makes the write conditional on
// before's resourceVersion (a conflict is returned for the caller to decide again).
func PatchStatus[T Object](ctx context.Context, c client.Client, before, obj T, opts ...client.MergeFromOption) error {
	was, _ := statusOf(before)
	is, _ := statusOf(obj)
	if equality.Semantic.DeepEqual(was, is) {
		return nil
	}
	err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, opts...))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}
