package fake_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A wedged container is dead and cannot be removed, under its name or another,
// until released; a rename still works.
func TestWedgeRemoval(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	c := mustCreate(t, f, ctx, ownSpec("ctr-w", fake.Script{Sleep: fake.Forever}))
	release, err := f.WedgeRemoval("ctr-w")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Peek(c.ID); got.State != dd.StateDead {
		t.Errorf("state %s, want dead", got.State)
	}
	err = f.Remove(ctx, "ctr-w", time.Second)
	if !errors.Is(err, dd.ErrRemovalStuck) || !strings.Contains(err.Error(), "device or resource busy") {
		t.Errorf("Remove of the wedged container = %v, want ErrRemovalStuck in Docker's words", err)
	}
	if err := f.Rename(ctx, "ctr-w", "ctr-w-dead"); err != nil {
		t.Fatalf("Rename of the wedged container = %v", err)
	}
	if err := f.Remove(ctx, "ctr-w-dead", time.Second); !errors.Is(err, dd.ErrRemovalStuck) {
		t.Errorf("Remove under its new name = %v, want ErrRemovalStuck", err)
	}
	release()
	if err := f.Remove(ctx, "ctr-w-dead", time.Second); err != nil {
		t.Errorf("Remove once released = %v", err)
	}
	if _, ok := f.Peek(c.ID); ok {
		t.Errorf("the container is still there after its removal")
	}
	if _, err := f.WedgeRemoval("ctr-w"); !errors.Is(err, dd.ErrNotFound) {
		t.Errorf("WedgeRemoval of a container that is gone = %v, want not found", err)
	}
}
