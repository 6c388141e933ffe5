package main

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typedv1 "github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/typed/api/v1alpha1"
)

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
