package drivertest

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// renameKeeps: a renamed container is the same container under the new name
// (ID, labels, state, networks), the old name is free for another, and watchers
// see a rename event naming both.
func (c contract) renameKeeps(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	network := env.Network(t)
	for _, tc := range []struct {
		name   string
		script Script
		state  dd.State
		byID   bool
	}{
		{"running", Script{Sleep: Forever}, dd.StateRunning, false},
		{"exited, by ID", Script{Exit: 3}, dd.StateExited, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(env, "rename", tc.script)
			s.Network, s.Aliases = network, []string{"db-" + randomHex(4)}
			events := d.Events(ctx, dd.EventFilter{Labels: map[string]string{OwnerLabel: s.Labels[OwnerLabel]}})
			mustCreate(t, ctx, d, s)
			before := waitState(t, ctx, d, s.Name, tc.state)
			ref, newName := s.Name, s.Name+"-renamed"
			if tc.byID {
				ref = before.ID
			}
			if err := d.Rename(ctx, ref, newName); err != nil {
				t.Fatal(err)
			}
			after, err := d.Inspect(ctx, newName)
			if err != nil {
				t.Fatalf("Inspect by the new name: %v", err)
			}
			if after.ID != before.ID || after.Name != newName || !maps.Equal(after.Labels, before.Labels) ||
				after.State != before.State || after.ExitCode != before.ExitCode || !reflect.DeepEqual(after.Networks, before.Networks) {
				t.Errorf("after rename: %s %q %v %s exit %d %+v\nwant the same container as before: %s %v %s exit %d %+v, named %q",
					after.ID, after.Name, after.Labels, after.State, after.ExitCode, after.Networks,
					before.ID, before.Labels, before.State, before.ExitCode, before.Networks, newName)
			}
			_, err = d.Inspect(ctx, s.Name)
			wantKind(t, err, dd.ErrNotFound)
			got := collect(t, events, dd.EventRename, 15*time.Second)
			if e := got[len(got)-1]; e.ID != before.ID || e.Name != newName || e.OldName != s.Name ||
				!maps.Equal(e.Labels, before.Labels) || e.Time.IsZero() {
				t.Errorf("rename event %+v: want id %s, name %s, old name %s, the labels %v, a time",
					e, before.ID, newName, s.Name, before.Labels)
			}
			// The old name is free: a container of another owner may take it.
			other := spec(env, "rename", Script{Sleep: Forever})
			other.Name = s.Name
			if got := mustCreate(t, ctx, d, other); got.ID == before.ID {
				t.Errorf("creating %s after the rename adopted the renamed container", s.Name)
			}
		})
	}
}

// renameConflicts: a name another container holds is a *ConflictError naming
// it, as at create, and neither container changes.
func (c contract) renameConflicts(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	a := mustCreate(t, ctx, d, spec(env, "rename-a", Script{Sleep: Forever}))
	b := mustCreate(t, ctx, d, spec(env, "rename-b", Script{Sleep: Forever}))
	err := d.Rename(ctx, a.Name, b.Name)
	wantKind(t, err, dd.ErrConflict)
	var ce *dd.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("error %T is not a *ConflictError", err)
	}
	if ce.Name != b.Name || ce.Existing.ID != b.ID || !maps.Equal(ce.Existing.Labels, b.Labels) {
		t.Errorf("ConflictError = %q held by %s %v, want %q held by %s %v",
			ce.Name, ce.Existing.ID, ce.Existing.Labels, b.Name, b.ID, b.Labels)
	}
	if !strings.Contains(err.Error(), a.Name) || !strings.Contains(err.Error(), b.Name) {
		t.Errorf("error %q does not name both containers", err)
	}
	for _, want := range []dd.Container{a, b} {
		got, err := d.Inspect(ctx, want.Name)
		if err != nil || got.ID != want.ID || got.State != dd.StateRunning {
			t.Errorf("%s after the refused rename: %s %s %v; want %s untouched", want.Name, got.ID, got.State, err, want.ID)
		}
	}
}

// renameRefuses: renaming a missing container is ErrNotFound and makes nothing;
// a container's own current name is refused (ErrInvalid, as Docker does), and so
// is a name Docker would not create.
func (c contract) renameRefuses(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	absent, newName := "sdt-"+randomHex(6)+"-absent", "sdt-"+randomHex(6)+"-new"
	err := d.Rename(ctx, absent, newName)
	wantKind(t, err, dd.ErrNotFound)
	if !strings.Contains(err.Error(), "rename "+absent) {
		t.Errorf("Rename error %q does not say what was done to what", err)
	}
	_, err = d.Inspect(ctx, newName)
	wantKind(t, err, dd.ErrNotFound)

	s := spec(env, "rename-self", Script{Sleep: Forever})
	created := mustCreate(t, ctx, d, s)
	for _, tc := range []struct{ ref, newName string }{
		{s.Name, s.Name}, {created.ID, s.Name}, {s.Name, ""}, {s.Name, "no spaces"}, {s.Name, "/" + s.Name + "-x"}, {"", newName},
	} {
		err := d.Rename(ctx, tc.ref, tc.newName)
		if !errors.Is(err, dd.ErrInvalid) || errors.Is(err, dd.ErrConflict) {
			t.Errorf("Rename(%q, %q) = %v, want ErrInvalid", tc.ref, tc.newName, err)
		}
	}
	got, err := d.Inspect(ctx, s.Name)
	if err != nil || got.ID != created.ID || got.State != dd.StateRunning {
		t.Errorf("after the refused renames: %s %s %v; want %s untouched", got.ID, got.State, err, created.ID)
	}
}
