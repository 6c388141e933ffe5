package drivertest

import (
	"slices"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// The contract of ExecDetached and exec_die: a detached exec returns at once
// and leaves the container free for Exec; every exec's end is an exec_die
// with its exec ID and exit code, on the streams that ask for them only.

func (c contract) execDetached(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "detached", Script{Sleep: Forever})
	owner := map[string]string{OwnerLabel: s.Labels[OwnerLabel]}
	withExecs := d.Events(ctx, dd.EventFilter{Labels: owner, ExecDie: true})
	without := d.Events(ctx, dd.EventFilter{Labels: owner})
	created := mustCreate(t, ctx, d, s)
	collect(t, withExecs, dd.EventStart, 15*time.Second)

	// A detached exec that never ends does not hold the call, nor the container.
	if id, err := d.ExecDetached(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Sleep: Forever})}); err != nil || id == "" {
		t.Fatalf("ExecDetached (runs forever) = %q, %v; want an exec ID", id, err)
	}
	if r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Exit: 5})}); err != nil || r.ExitCode != 5 {
		t.Fatalf("Exec beside a detached exec = %+v, %v; want it to run (exit 5)", r, err)
	}
	id, err := d.ExecDetached(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Sleep: 300 * time.Millisecond, Exit: 3})})
	if err != nil || id == "" {
		t.Fatalf("ExecDetached = %q, %v; want an exec ID", id, err)
	}

	codes := map[int]dd.Event{}
	for len(codes) < 2 {
		got := collect(t, withExecs, dd.EventExecDie, 15*time.Second)
		e := got[len(got)-1]
		codes[e.ExitCode] = e
		if e.ID != created.ID || e.Name != s.Name || e.Labels[OwnerLabel] != s.Labels[OwnerLabel] || e.ExecID == "" || e.Time.IsZero() {
			t.Errorf("exec_die %+v: want the container's ID, name and labels, an exec ID and a time", e)
		}
		if _, leaked := e.Labels["execID"]; leaked {
			t.Errorf("exec_die labels carry Docker's attributes: %v", e.Labels)
		}
	}
	if e, ok := codes[3]; !ok || e.ExecID != id {
		t.Errorf("exec_die events %v: want the detached exec's (ID %s) with its exit code 3", codes, id)
	}
	if _, ok := codes[5]; !ok {
		t.Errorf("exec_die events %v: want the attached exec's, exit code 5", codes)
	}

	if err := d.Remove(ctx, s.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	plain := collect(t, without, dd.EventDestroy, 15*time.Second)
	if slices.Contains(types(plain), dd.EventExecDie) {
		t.Errorf("a stream that did not ask for exec_die got one: %v", types(plain))
	}
}

// preparedLaunch: a prepared exec launched answers a command that ends within
// the wait as Run does; one that does not runs on, detached: the container is
// free for Exec, and its end is an exec_die with its exit code.
func (c contract) preparedLaunch(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "launched", Script{Sleep: Forever})
	owner := map[string]string{OwnerLabel: s.Labels[OwnerLabel]}
	withExecs := d.Events(ctx, dd.EventFilter{Labels: owner, ExecDie: true})
	mustCreate(t, ctx, d, s)
	collect(t, withExecs, dd.EventStart, 15*time.Second)

	quick, err := d.PrepareExec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{EchoEnv: []string{"SANDBOX_SECRET"}, Exit: 4})})
	if err != nil {
		t.Fatal(err)
	}
	if r, ended, err := quick.Launch(ctx, map[string]string{"SANDBOX_SECRET": "s"}, 20*time.Second, nil); err != nil || !ended || r.ExitCode != 4 || r.Stdout != "s\n" {
		t.Errorf("Launch of a quick command = %+v, ended %v, %v; want it ended, exit 4, its output", r, ended, err)
	}
	slow, err := d.PrepareExec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Sleep: 2 * time.Second, EchoEnv: []string{"SANDBOX_SECRET"}, Exit: 3}),
		Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	late := make(chan dd.ExecResult, 1)
	if _, ended, err := slow.Launch(ctx, map[string]string{"SANDBOX_SECRET": "late"}, 0, func(r dd.ExecResult) { late <- r }); err != nil || ended {
		t.Fatalf("Launch of a slow command = ended %v, %v; want it running on", ended, err)
	}
	if r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Exit: 5})}); err != nil || r.ExitCode != 5 {
		t.Fatalf("Exec beside a launched command, past its timeout = %+v, %v; want it to run (exit 5)", r, err)
	}
	codes := map[int]bool{}
	for !codes[3] {
		got := collect(t, withExecs, dd.EventExecDie, 15*time.Second)
		codes[got[len(got)-1].ExitCode] = true
	}
	select {
	case r := <-late:
		if r.ExitCode != 3 || r.Stdout != "late\n" {
			t.Errorf("the slow command's late result = %+v; want exit 3, its output", r)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("the slow command ended (its exec_die came) but its late result never did")
	}
}
