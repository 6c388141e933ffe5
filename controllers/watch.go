package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// dockerWatch turns Docker container events into reconcile requests, so a container
// that dies or vanishes is noticed at once without polling. After the stream
// reconnects (events may have been missed) it re-queues every Sandbox.
type dockerWatch struct {
	driver  dd.Driver
	reader  client.Reader
	enqueue func(types.NamespacedName)
}

// NeedLeaderElection: only the leader acts on events.
func (w *dockerWatch) NeedLeaderElection() bool { return true }

func (w *dockerWatch) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("docker-events")
	for ev := range w.driver.Events(ctx, dd.EventFilter{Labels: map[string]string{LabelSandbox: labelSandboxTrue}}) {
		if ev.Type == dd.EventResync {
			log.Info("Docker event stream reconnected; re-queueing every Sandbox")
			w.enqueueAll(ctx)
			continue
		}
		if key, ok := sandboxKey(ev.Labels); ok {
			w.enqueue(key)
		}
	}
	return nil
}

func (w *dockerWatch) enqueueAll(ctx context.Context) {
	var list sandboxv1.SandboxList
	if err := w.reader.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "Listing Sandboxes after an event stream reconnect")
		return
	}
	for i := range list.Items {
		w.enqueue(types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name})
	}
}
