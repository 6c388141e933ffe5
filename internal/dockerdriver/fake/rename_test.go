package fake_test

import (
	"errors"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A fault may name the new name of a rename; a failed rename changes nothing.
func TestRenameFault(t *testing.T) {
	t.Parallel()
	f, ctx := newFake(t)
	c := mustCreate(t, f, ctx, ownSpec("ctr-r", fake.Script{Sleep: fake.Forever}))
	f.Inject(fake.Fault{Verb: fake.VerbRename, Ref: "ctr-r2", Err: dd.ErrUnavailable, Times: 1})
	err := f.Rename(ctx, "ctr-r", "ctr-r2")
	if !errors.Is(err, dd.ErrUnavailable) || err.Error() != "rename ctr-r: docker unavailable" {
		t.Errorf("Rename under a fault = %v, want %q", err, "rename ctr-r: docker unavailable")
	}
	if got, ok := f.Peek("ctr-r"); !ok || got.ID != c.ID {
		t.Errorf("after the failed rename, ctr-r is %+v (found %v); want %s", got, ok, c.ID)
	}
	if err := f.Rename(ctx, "ctr-r", "ctr-r2"); err != nil {
		t.Errorf("Rename once the fault is spent = %v", err)
	}
	if got, ok := f.Peek("ctr-r2"); !ok || got.ID != c.ID {
		t.Errorf("ctr-r2 is %+v (found %v); want %s", got, ok, c.ID)
	}
	if n := f.Calls(fake.VerbRename); n != 2 {
		t.Errorf("Calls(Rename) = %d, want 2", n)
	}
}
