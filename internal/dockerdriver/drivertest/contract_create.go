package drivertest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of CreateContainer: what a created container reports, adoption,
// conflicts and validation.

// createRefusesCPUs: Ping's NCPU is the most CPUs a container may ask for; one
// more is refused at create (invalid, not retryable) and leaves nothing behind.
func (c contract) createRefusesCPUs(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	info, err := d.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	network := env.Network(t)
	s := spec(env, "cpus", Script{Sleep: Forever})
	s.Network, s.NanoCPUs = network, int64(info.NCPU)*1e9
	mustCreate(t, ctx, d, s)
	s = spec(env, "cpus", Script{Sleep: Forever})
	s.Network, s.NanoCPUs = network, int64(info.NCPU+1)*1e9
	if _, err := d.CreateContainer(ctx, s); !errors.Is(err, dd.ErrInvalid) || !strings.Contains(err.Error(), "CPUs") {
		t.Errorf("CreateContainer with %d CPUs on a host of %d: error = %v, want ErrInvalid naming the CPUs", info.NCPU+1, info.NCPU, err)
	}
	if list, err := d.List(ctx, env.Labels()); err != nil || len(list) != 1 {
		t.Errorf("List = %d containers, %v; want only the first", len(list), err)
	}
}

func (c contract) createReportsSpec(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	net := env.Network(t)
	s := reportsSpec(env, net)
	got := mustCreate(t, ctx, d, s)
	checkReported(t, "CreateContainer", s, net, got)
	byName, err := d.Inspect(ctx, s.Name)
	if err != nil {
		t.Fatal(err)
	}
	checkReported(t, "Inspect(name)", s, net, byName)
	byID, err := d.Inspect(ctx, got.ID)
	if err != nil || byID.ID != got.ID {
		t.Fatalf("Inspect(id) = %q, %v", byID.ID, err)
	}
}

// reportsSpec sets every field of a spec that a container reports back.
func (c contract) createWritesFiles(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	secret := "s3cret-" + randomHex(8)
	files := []dd.File{
		{Path: "/run/sdt/secret.conf", Mode: 0o444, Content: []byte("requirepass " + secret + "\n")},
		{Path: "/etc/sdt-other", Mode: 0o400, Content: []byte("other\n")},
	}
	for _, started := range []bool{true, false} {
		s := spec(env, "files", Script{Cat: []string{files[0].Path, files[1].Path}, Sleep: Forever})
		s.Files = files
		if !started {
			env.CreateNotStarted(t, s) // as a creator that died before writing the files leaves it
		}
		got := mustCreate(t, ctx, d, s)
		var logs string
		eventually(t, 15*time.Second, "the files in the log", func() (bool, string) {
			logs, _ = d.LogsTail(ctx, s.Name, 10)
			return logs == "requirepass "+secret+"\nother\n", logs
		})
		if inspected := fmt.Sprint(got.Env, got.Cmd, got.Labels); strings.Contains(inspected, secret) {
			t.Errorf("inspect shows the file's secret: %s", inspected)
		}
		r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Cat: []string{files[0].Path}})})
		if err != nil || r.Stdout != string(files[0].Content) {
			t.Errorf("exec cat = %+v, %v; want the file", r, err)
		}
	}
}

func (c contract) createIdempotent(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "idem", Script{Sleep: Forever})
	first := mustCreate(t, ctx, d, s)
	second := mustCreate(t, ctx, d, s)
	if second.ID != first.ID || second.State != dd.StateRunning {
		t.Errorf("second create = %s (%s), want adoption of %s", second.ID, second.State, first.ID)
	}
	list, err := d.List(ctx, map[string]string{OwnerLabel: s.Labels[OwnerLabel]})
	if err != nil || len(list) != 1 {
		t.Errorf("List after two creates = %v, %v; want one container", list, err)
	}
}

func (c contract) createAdoptsNotStarted(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "created", Script{Sleep: Forever})
	env.CreateNotStarted(t, s)
	before, err := d.Inspect(ctx, s.Name)
	if err != nil || before.State != dd.StateCreated {
		t.Fatalf("Inspect = %q, %v; want created", before.State, err)
	}
	got := mustCreate(t, ctx, d, s)
	if got.ID != before.ID || got.State != dd.StateRunning {
		t.Errorf("CreateContainer = %s (%s), want %s started", got.ID, got.State, before.ID)
	}
}

// createRemovesUnstartable: a container left created (its creator crashed
// between create and start) that Docker then refuses to start is removed,
// as one the call created is, so that the next create makes a new one (a
// refused start may be refused for good: a task a daemon restart left).
func (c contract) createRemovesUnstartable(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "unstartable", Script{Sleep: Forever})
	s.Network = env.Network(t)
	env.CreateNotStarted(t, s)
	env.RemoveNetwork(t, s.Network)
	_, err := d.CreateContainer(ctx, s)
	wantKind(t, err, dd.ErrNotFound)
	_, err = d.Inspect(ctx, s.Name)
	wantKind(t, err, dd.ErrNotFound)
}

func (c contract) createAdoptsExited(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exited", Script{Exit: 3})
	first := mustCreate(t, ctx, d, s)
	waitState(t, ctx, d, s.Name, dd.StateExited)
	got := mustCreate(t, ctx, d, s)
	if got.ID != first.ID || got.State != dd.StateExited || got.ExitCode != 3 {
		t.Errorf("CreateContainer = %s (%s, exit %d), want %s as it is: exited 3", got.ID, got.State, got.ExitCode, first.ID)
	}
}

func (c contract) createConflicts(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	for _, tc := range []struct {
		name  string
		label string // the foreign container's ownership label
	}{
		{"other owner", OwnerLabel},
		{"no owner label", "sandbox.roboco.io/someone-else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foreign := spec(env, "foreign", Script{Sleep: Forever})
			if tc.label != OwnerLabel {
				delete(foreign.Labels, OwnerLabel)
				foreign.Labels[tc.label] = "x"
				foreign.OwnerLabel = tc.label
			}
			theirs := mustCreate(t, ctx, d, foreign)

			ours := spec(env, "foreign", Script{Sleep: Forever})
			ours.Name = foreign.Name
			_, err := d.CreateContainer(ctx, ours)
			wantKind(t, err, dd.ErrConflict)
			var ce *dd.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *ConflictError", err)
			}
			if ce.Existing.ID != theirs.ID || !maps.Equal(ce.Existing.Labels, theirs.Labels) {
				t.Errorf("ConflictError.Existing = %s %v, want %s %v", ce.Existing.ID, ce.Existing.Labels, theirs.ID, theirs.Labels)
			}
			if !strings.Contains(err.Error(), foreign.Name) {
				t.Errorf("error %q does not name the container", err)
			}
			after, err := d.Inspect(ctx, foreign.Name)
			if err != nil || after.ID != theirs.ID || after.State != dd.StateRunning {
				t.Errorf("foreign container after conflict: %s %s %v; want untouched", after.ID, after.State, err)
			}
		})
	}
}

func (c contract) createValidates(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	for name, mutate := range map[string]func(*dd.ContainerSpec){
		"empty name":        func(s *dd.ContainerSpec) { s.Name = "" },
		"bad name":          func(s *dd.ContainerSpec) { s.Name = "/no spaces" },
		"no owner label":    func(s *dd.ContainerSpec) { s.OwnerLabel = "" },
		"owner label unset": func(s *dd.ContainerSpec) { delete(s.Labels, OwnerLabel) },
		"no image":          func(s *dd.ContainerSpec) { s.Image = "" },
		"relative file":     func(s *dd.ContainerSpec) { s.Files = []dd.File{{Path: "etc/x"}} },
		"file under a tmpfs": func(s *dd.ContainerSpec) {
			s.Tmpfs, s.Files = map[string]string{"/data": ""}, []dd.File{{Path: "/data/x"}}
		},
	} {
		s := spec(env, "invalid", Script{Sleep: Forever})
		mutate(&s)
		_, err := d.CreateContainer(ctx, s)
		if !errors.Is(err, dd.ErrInvalid) {
			t.Errorf("%s: CreateContainer error = %v, want ErrInvalid", name, err)
		}
	}
	list, err := d.List(ctx, env.Labels())
	if err != nil || len(list) != 0 {
		t.Errorf("List after invalid creates = %v, %v; want nothing", list, err)
	}
}

func (c contract) createMissingImage(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "noimage", Script{Sleep: Forever})
	s.Image = "sandbox-driver-test/absent:" + randomHex(4)
	_, err := d.CreateContainer(ctx, s)
	wantKind(t, err, dd.ErrNotFound)
	if !strings.Contains(err.Error(), s.Name) {
		t.Errorf("error %q does not name the container", err)
	}
}

// createMissingNetwork is a start failure: Docker creates the container, then
// refuses to start it. The driver removes it again, so the events a watcher sees
// are create, then destroy, and nothing is left.
func (c contract) createMissingNetwork(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "nonet", Script{Sleep: Forever})
	s.Network = "sdt-absent-" + randomHex(4)
	events := d.Events(ctx, dd.EventFilter{Labels: map[string]string{OwnerLabel: s.Labels[OwnerLabel]}})
	_, err := d.CreateContainer(ctx, s)
	wantKind(t, err, dd.ErrNotFound)
	if err != nil && (!strings.Contains(err.Error(), s.Name) || !strings.Contains(err.Error(), s.Network)) {
		t.Errorf("error %q does not name the container and the network", err)
	}
	_, err = d.Inspect(ctx, s.Name)
	wantKind(t, err, dd.ErrNotFound)
	got := collect(t, events, dd.EventDestroy, 15*time.Second)
	if want := []dd.EventType{dd.EventCreate, dd.EventDestroy}; !slices.Equal(types(got), want) {
		t.Errorf("events %v, want %v", types(got), want)
	}
	if got[len(got)-1].Name != s.Name {
		t.Errorf("destroy event for %q, want %q", got[len(got)-1].Name, s.Name)
	}
}
