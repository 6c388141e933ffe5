package fakedocker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// EngineAnswers recognises a step by its argv alone: that needs the password
// to stay out of every argv.
func TestEngineStepsKeepPasswordsOutOfArgv(t *testing.T) {
	for _, e := range engine.All() {
		a, b := e.Probe("pw-one", "10.0.0.2"), e.Probe("pw-two", "10.0.0.2")
		va, _ := e.VerifyFeatures("pw-one", "10.0.0.2")
		vb, _ := e.VerifyFeatures("pw-two", "10.0.0.2")
		if !slices.Equal(a.Argv, b.Argv) || !slices.Equal(va.Argv, vb.Argv) {
			t.Errorf("%s: a step's argv depends on the password", e.Name())
		}
	}
}

// TestEngineAnswers: through the real driver, every engine's probe and rotation
// (prepared, as a claim runs it) pass in a container made for that engine; an
// exec that is no engine step is left to the fake.
func TestEngineAnswers(t *testing.T) {
	srv := serve(t, fakedocker.New(fakedocker.WithImage(testImage, fakedocker.Image{}),
		fakedocker.WithExecHook(fakedocker.EngineAnswers)))
	d := newDriver(t, dd.WithHost(srv.Host()))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			c, err := d.CreateContainer(ctx, dd.ContainerSpec{Name: "svc-" + e.Slug(), Image: testImage, OwnerLabel: host.LabelUID,
				Labels: map[string]string{host.LabelUID: "u-" + e.Slug(), host.LabelEngine: e.Name()}})
			if err != nil {
				t.Fatal(err)
			}
			addr := host.Address(c, "")
			probe := e.Probe("secret", addr)
			res, err := d.Exec(ctx, c.ID, dd.ExecSpec{Cmd: probe.Argv, Env: probe.Env})
			if err != nil || !probe.Passed(res.ExitCode, res.Stdout) {
				t.Errorf("probe = %+v, %v; want it passed", res, err)
			}
			if rotate := e.Rotate(addr); rotate.Argv != nil {
				p, err := d.PrepareExec(ctx, c.ID, dd.ExecSpec{Cmd: rotate.Argv, Env: rotate.Env})
				if err != nil {
					t.Fatal(err)
				}
				res, err := p.Run(ctx, engine.RotateEnv(e, "old", "new"))
				if err != nil || !rotate.Passed(res.ExitCode, res.Stdout) {
					t.Errorf("rotation = %+v, %v; want it passed", res, err)
				}
			}
			other := e.Probe("secret", "10.9.9.9") // not this container's address
			if res, err := d.Exec(ctx, c.ID, dd.ExecSpec{Cmd: other.Argv}); err != nil || res.Stdout != "" {
				t.Errorf("a probe of another address = %+v, %v; want it left to the fake (no output)", res, err)
			}
		})
	}
}
