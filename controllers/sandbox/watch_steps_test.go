package sandbox

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/eventhub"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/host/step"
)

// TestStepEndWakesItsSandbox: the end of a step's runner in a Sandbox's
// container re-queues the Sandbox at once; the end of any other exec (every
// probe's) re-queues nothing.
func TestStepEndWakesItsSandbox(t *testing.T) {
	f := fake.New()
	f.AddImage("postgres:16-alpine", fake.Image{})
	c, err := f.SeedContainer(dd.ContainerSpec{Name: "roboco-sandbox-pg-a1", Image: "postgres:16-alpine", Labels: map[string]string{
		host.LabelSandbox: host.LabelSandboxTrue, host.LabelNamespace: "ns", host.LabelName: "sb"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	woken := make(chan types.NamespacedName, 16)
	w := &dockerWatch{events: eventhub.NewShared(f), own: newOwnActions(), forgetHost: func() {}, retryNow: func() {},
		enqueue: func(k types.NamespacedName) { woken <- k }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()

	// Note: the hub connects in the background; a step's end, sent until it
	// is seen, proves the stream carries exec_die.
	first := time.After(30 * time.Second)
	for seen := false; !seen; {
		f.ExecDied(c.ID, step.RunnerExit)
		select {
		case k := <-woken:
			if k != (types.NamespacedName{Namespace: "ns", Name: "sb"}) {
				t.Fatalf("a step's end woke %v", k)
			}
			seen = true
		case <-time.After(100 * time.Millisecond):
		case <-first:
			t.Fatal("a step's end never woke its Sandbox")
		}
	}
	for len(woken) > 0 {
		<-woken
	}
	for range 5 {
		f.ExecDied(c.ID, 0) // a probe's end
	}
	f.ExecDied(c.ID, step.RunnerExit)
	if k := <-woken; k.Name != "sb" {
		t.Fatalf("woke %v", k)
	}
	// Note: events are handled in order: a wake of the probes' ends would be
	// queued before the step's.
	if n := len(woken); n > 0 {
		t.Fatalf("the ends of 5 other execs woke the Sandbox %d more times", n)
	}
}
