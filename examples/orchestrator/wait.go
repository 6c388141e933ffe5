package main

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	typedv1 "github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/typed/api/v1alpha1"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// waitReady waits until the Sandbox is Ready for its current spec, and fails
// when it is Stalled (its message says what to change) or deleted. It lists and
// watches through an informer (watchtools.UntilWithSync), so a dropped watch or
// an API server restart costs a relist, not the wait.
func waitReady(ctx context.Context, sandboxes typedv1.SandboxInterface, sb *sandboxv1.Sandbox) (*sandboxv1.Sandbox, error) {
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
	last := ""
	ev, err := watchtools.UntilWithSync(ctx, lw, &sandboxv1.Sandbox{}, nil, func(ev watch.Event) (bool, error) {
		got, ok := ev.Object.(*sandboxv1.Sandbox)
		switch {
		case !ok || got.UID != sb.UID:
			return false, nil
		case ev.Type == watch.Deleted:
			return false, apierrors.NewNotFound(sandboxv1.Resource("sandboxes"), sb.Name)
		case sandboxv1.IsReady(got):
			return true, nil
		}
		if c := sandboxv1.StalledCondition(got); c != nil {
			return false, fmt.Errorf("the Sandbox %s is stalled (%s): %s", got.Name, c.Reason, c.Message)
		}
		last = progress(got)
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil && last != "" {
			return nil, fmt.Errorf("the Sandbox %s is not Ready: %s: %w", sb.Name, last, err)
		}
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

// deleteSandbox deletes the Sandbox and waits (briefly) until its teardown ends,
// so the agent's services are gone when the orchestrator exits.
func deleteSandbox(sandboxes typedv1.SandboxInterface, o options) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := sandboxes.Delete(ctx, o.agent, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintln(os.Stderr, "orchestrator: deleting the Sandbox:", err)
		return
	}
	for ctx.Err() == nil {
		if _, err := sandboxes.Get(ctx, o.agent, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			fmt.Fprintln(os.Stderr, "orchestrator: Sandbox deleted")
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "orchestrator: the Sandbox's teardown did not end within a minute")
}
