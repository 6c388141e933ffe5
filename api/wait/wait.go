// Package wait waits for a Sandbox the way an orchestrator should: through an
// informer, so a dropped watch or an API server restart costs a relist, not the
// wait.
package wait

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// Ready waits until the Sandbox sb (by name and UID) is Ready for its current
// spec, and fails when it is Stalled (the error carries what to change), deleted,
// or ctx ends (the error carries its last Ready reason and message).
func Ready(ctx context.Context, cs versioned.Interface, sb *sandboxv1.Sandbox) (*sandboxv1.Sandbox, error) {
	last := ""
	got, err := until(ctx, cs, sb, func(got *sandboxv1.Sandbox) (bool, error) {
		if sandboxv1.IsReady(got) {
			return true, nil
		}
		if c := sandboxv1.StalledCondition(got); c != nil {
			return false, fmt.Errorf("the Sandbox %s is stalled (%s): %s", got.Name, c.Reason, c.Message)
		}
		last = progress(got)
		return false, nil
	})
	if err != nil && ctx.Err() != nil && last != "" {
		return nil, fmt.Errorf("the Sandbox %s is not Ready: %s: %w", sb.Name, last, err)
	}
	if err != nil {
		return nil, err
	}
	return got, nil
}

// Data waits until status.data reports the spec.data request id finished,
// Succeeded or Failed, and returns that Sandbox; sb is the Sandbox as the
// write of spec.data returned it: status.data must be judged at its
// generation or later, since one judged earlier may be an earlier request's
// under the same id. When ctx ends first it returns the last version seen
// (sb when none), whose status.data.message says what the request still
// waits for, with ctx's error.
func Data(ctx context.Context, cs versioned.Interface, sb *sandboxv1.Sandbox, id string) (*sandboxv1.Sandbox, error) {
	last := sb
	got, err := until(ctx, cs, sb, func(got *sandboxv1.Sandbox) (bool, error) {
		last = got
		d := got.Status.Data
		return d != nil && d.ID == id && d.ObservedGeneration >= sb.Generation &&
			(d.Phase == sandboxv1.DataSucceeded || d.Phase == sandboxv1.DataFailed), nil
	})
	if err != nil {
		return last, err
	}
	return got, nil
}

// until follows the Sandbox sb (by name and UID) through an informer until
// done says so, and fails when done does, when it is deleted, or when ctx ends.
func until(ctx context.Context, cs versioned.Interface, sb *sandboxv1.Sandbox, done func(*sandboxv1.Sandbox) (bool, error)) (*sandboxv1.Sandbox, error) {
	sandboxes := cs.SandboxV1alpha1().Sandboxes(sb.Namespace)
	one := fields.OneTermEqualSelector("metadata.name", sb.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = one
			return sandboxes.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = one
			return sandboxes.Watch(ctx, opts)
		},
	}
	// Note: a fake clientset cannot stream the initial list (WatchList); the
	// wrapper lets the informer see that and list instead.
	ev, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, cs), &sandboxv1.Sandbox{}, nil, func(ev watch.Event) (bool, error) {
		got, ok := ev.Object.(*sandboxv1.Sandbox)
		switch {
		case !ok || got.UID != sb.UID:
			return false, nil
		case ev.Type == watch.Deleted:
			return false, apierrors.NewNotFound(sandboxv1.Resource("sandboxes"), sb.Name)
		}
		return done(got)
	})
	if err != nil {
		return nil, err
	}
	return ev.Object.(*sandboxv1.Sandbox), nil
}

// progress is the Ready condition's reason and message, for a timeout's error.
func progress(sb *sandboxv1.Sandbox) string {
	for _, c := range sb.Status.Conditions {
		if c.Type == sandboxv1.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return "no status yet"
}
