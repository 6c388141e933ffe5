package kit

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

type writesKey struct{}

// WithWrites returns ctx carrying wrote, which NoteWrite calls with the object
// the API server returned to each write made under ctx: a pass that writes its
// object in several steps (its finalizer, claim records, status) learns the
// version each left, so that its last write can be conditional on it.
func WithWrites(ctx context.Context, wrote func(client.Object)) context.Context {
	return context.WithValue(ctx, writesKey{}, wrote)
}

// NoteWrite tells ctx's pass (if any) what a write of obj returned.
func NoteWrite(ctx context.Context, obj client.Object) {
	if wrote, ok := ctx.Value(writesKey{}).(func(client.Object)); ok {
		wrote(obj)
	}
}
