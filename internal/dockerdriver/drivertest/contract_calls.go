package drivertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of the calls on an existing container: deadlines, NotFound, List,
// Logs and Remove (Exec: contract_exec.go).

// callsHaveDeadlines: against a daemon that accepts calls and never answers, a
// call whose caller set no deadline gives up after the driver's own, saying the
// daemon did not answer in time (a timeout, and unavailable); an exec after its
// timeout. Once the daemon answers again, so does the driver.
func (c contract) callsHaveDeadlines(t *testing.T) {
	const budget = 300 * time.Millisecond
	d, env, setupCtx := c.setup(t, Config{CallTimeout: budget})
	s := spec(env, "deadline", Script{Sleep: Forever})
	mustCreate(t, setupCtx, d, s)
	ctx := context.WithoutCancel(setupCtx) // no deadline: the driver's applies
	resume := env.Stall(t)
	// Connections made before the stall are broken: wait until calls hang.
	eventually(t, 10*time.Second, "Ping timing out", func() (bool, string) {
		_, err := d.Ping(ctx)
		return errors.Is(err, dd.ErrTimeout), fmt.Sprint(err)
	})
	for _, call := range []struct {
		name  string
		do    func() error
		kinds []error
	}{
		{"ping", func() error { _, err := d.Ping(ctx); return err }, nil},
		{"list", func() error { _, err := d.List(ctx, env.Labels()); return err }, nil},
		{"inspect", func() error { _, err := d.Inspect(ctx, s.Name); return err }, nil},
		{"image present", func() error { _, err := d.ImagePresent(ctx, env.Image()); return err }, nil},
		{"logs", func() error { _, err := d.LogsTail(ctx, s.Name, 5); return err }, nil},
		{"create", func() error {
			_, err := d.CreateContainer(ctx, spec(env, "stalled", Script{Sleep: Forever}))
			return err
		}, nil},
		{"rename", func() error { return d.Rename(ctx, s.Name, s.Name+"-renamed") }, nil},
		{"remove", func() error { return d.Remove(ctx, s.Name, 0) }, nil},
		{"exec", func() error {
			_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{}), Timeout: budget})
			return err
		}, []error{dd.ErrTimeout}},
	} {
		kinds := call.kinds
		if kinds == nil {
			kinds = []error{dd.ErrTimeout, dd.ErrUnavailable}
		}
		done := make(chan error, 1)
		go func() { done <- call.do() }()
		select {
		case err := <-done:
			t.Run(call.name, func(t *testing.T) { wantKind(t, err, kinds...) })
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting for a daemon that never answers", call.name)
		}
	}
	resume()
	eventually(t, 10*time.Second, "Inspect answering again", func() (bool, string) {
		got, err := d.Inspect(ctx, s.Name)
		return err == nil && got.Name == s.Name, fmt.Sprint(err)
	})
}

func (c contract) notFound(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	name := "sdt-" + randomHex(6) + "-absent"
	_, err := d.Inspect(ctx, name)
	wantKind(t, err, dd.ErrNotFound)
	if !strings.Contains(err.Error(), "inspect "+name) {
		t.Errorf("Inspect error %q does not say what was done to what", err)
	}
	_, err = d.Exec(ctx, name, dd.ExecSpec{Cmd: env.Command(Script{})})
	wantKind(t, err, dd.ErrNotFound)
	_, err = d.LogsTail(ctx, name, 5)
	wantKind(t, err, dd.ErrNotFound)
	if err := d.Remove(ctx, name, time.Second); err != nil {
		t.Errorf("Remove of an absent container = %v, want success", err)
	}
	present, err := d.ImagePresent(ctx, "sandbox-driver-test/absent:"+randomHex(4))
	if err != nil || present {
		t.Errorf("ImagePresent(absent) = %v, %v; want false, nil", present, err)
	}
	list, err := d.List(ctx, map[string]string{OwnerLabel: randomHex(8)})
	if err != nil || len(list) != 0 {
		t.Errorf("List(no match) = %v, %v; want empty", list, err)
	}
}

func (c contract) list(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	group := randomHex(4)
	mk := func(g string, s Script) dd.ContainerSpec {
		sp := spec(env, "list", s)
		sp.Labels["sandbox.roboco.io/test-group"] = g
		mustCreate(t, ctx, d, sp)
		return sp
	}
	running := mk(group, Script{Sleep: Forever})
	exited := mk(group, Script{Exit: 2})
	mk(group+"-other", Script{Sleep: Forever})
	waitState(t, ctx, d, exited.Name, dd.StateExited)

	start := time.Now().Add(-time.Minute)
	got, err := d.List(ctx, map[string]string{"sandbox.roboco.io/test-group": group, "sandbox.roboco.io/engine": ""})
	if err != nil || len(got) != 0 {
		t.Errorf("List with an extra label = %v, %v; want nothing (labels are ANDed)", got, err)
	}
	got, err = d.List(ctx, map[string]string{"sandbox.roboco.io/test-group": group})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]dd.State{}
	for _, s := range got {
		states[s.Name] = s.State
		if s.ID == "" || s.Image != env.Image() || s.CreatedAt.Before(start) || s.Labels["sandbox.roboco.io/test-group"] != group {
			t.Errorf("summary %+v: want id, image %s, recent creation, labels", s, env.Image())
		}
	}
	want := map[string]dd.State{running.Name: dd.StateRunning, exited.Name: dd.StateExited}
	if !maps.Equal(states, want) {
		t.Errorf("List = %v, want %v", states, want)
	}
}

func (c contract) logsTail(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	s := spec(env, "logs", Script{Stdout: lines, Stderr: []string{"failed: bad config"}, Exit: 1})
	mustCreate(t, ctx, d, s)
	waitState(t, ctx, d, s.Name, dd.StateExited)
	got, err := d.LogsTail(ctx, s.Name, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 29\nline 30\nfailed: bad config\n"; got != want {
		t.Errorf("LogsTail(3) = %q, want %q", got, want)
	}
}

func (c contract) remove(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	for _, tc := range []struct {
		name   string
		script Script
		byID   bool
	}{
		{"running", Script{Sleep: Forever}, false},
		{"exited, by ID", Script{Exit: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spec(env, "remove", tc.script)
			created := mustCreate(t, ctx, d, s)
			var volume string
			for _, m := range created.Mounts {
				if m.Type == "volume" && m.Destination == "/data" {
					volume = m.Name
				}
			}
			if volume == "" || !env.VolumeExists(t, volume) {
				t.Fatalf("mounts %+v: want the image's anonymous volume at /data", created.Mounts)
			}
			ref := s.Name
			if tc.byID {
				ref = created.ID
			}
			start := time.Now()
			if err := d.Remove(ctx, ref, 2*time.Second); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Remove took %v", took)
			}
			_, err := d.Inspect(ctx, s.Name)
			wantKind(t, err, dd.ErrNotFound)
			if env.VolumeExists(t, volume) {
				t.Errorf("anonymous volume %s survived its container", volume)
			}
			if err := d.Remove(ctx, ref, time.Second); err != nil {
				t.Errorf("second Remove = %v, want success", err)
			}
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		// A second remover must not fail because the first is at work
		// (Docker: "removal already in progress").
		s := spec(env, "remove2", Script{Sleep: Forever})
		mustCreate(t, ctx, d, s)
		errs := make(chan error, 3)
		for range cap(errs) {
			go func() { errs <- d.Remove(ctx, s.Name, time.Second) }()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Errorf("concurrent Remove = %v, want success", err)
			}
		}
		_, err := d.Inspect(ctx, s.Name)
		wantKind(t, err, dd.ErrNotFound)
	})
}
