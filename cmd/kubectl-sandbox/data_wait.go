package main

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	typed "github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/typed/api/v1alpha1"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// dataFinished: status.data reports request id Succeeded or Failed.
func dataFinished(sb *sandboxv1.Sandbox, id string) bool {
	d := sb.Status.Data
	return d != nil && d.ID == id && (d.Phase == sandboxv1.DataSucceeded || d.Phase == sandboxv1.DataFailed)
}

// awaitData watches the Sandbox from sb until request id is finished, and
// returns the last Sandbox seen with ctx's error when it ends first. A watch
// that fails or ends (a server timeout, a resourceVersion too old) is
// followed by a fresh get and a new watch from there, at most once a second.
func awaitData(ctx context.Context, sandboxes typed.SandboxInterface, sb *sandboxv1.Sandbox, id string) (*sandboxv1.Sandbox, error) {
	for !dataFinished(sb, id) {
		began := time.Now()
		got, err := watchData(ctx, sandboxes, sb, id)
		sb = got
		switch {
		case ctx.Err() != nil:
			return sb, ctx.Err()
		case err == nil:
			continue
		case apierrors.IsNotFound(err):
			return sb, err
		}
		select {
		case <-ctx.Done():
			return sb, ctx.Err()
		case <-time.After(time.Second - time.Since(began)):
		}
		if got, err = sandboxes.Get(ctx, sb.Name, metav1.GetOptions{}); err == nil {
			sb = got
		} else if apierrors.IsNotFound(err) {
			return sb, err
		}
	}
	return sb, nil
}

// watchData follows one watch from sb's resourceVersion; it returns the last
// Sandbox seen, with nil once request id is finished.
func watchData(ctx context.Context, sandboxes typed.SandboxInterface, sb *sandboxv1.Sandbox, id string) (*sandboxv1.Sandbox, error) {
	w, err := sandboxes.Watch(ctx, metav1.ListOptions{ResourceVersion: sb.ResourceVersion,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", sb.Name).String()})
	if err != nil {
		return sb, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return sb, ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open {
				return sb, errors.New("the watch ended")
			}
			switch got, ok := ev.Object.(*sandboxv1.Sandbox); {
			case ev.Type == watch.Error:
				return sb, apierrors.FromObject(ev.Object)
			case ev.Type == watch.Deleted:
				return sb, apierrors.NewNotFound(sandboxv1.Resource("sandboxes"), sb.Name)
			case ok && (ev.Type == watch.Added || ev.Type == watch.Modified):
				if sb = got; dataFinished(sb, id) {
					return sb, nil
				}
			}
		}
	}
}
