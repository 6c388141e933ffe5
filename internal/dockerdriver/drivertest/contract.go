package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// OwnerLabel is the ownership label the suite's specs use.
const OwnerLabel = "sandbox.roboco.io/uid"

// RunContract runs the driver contract. Every subtest is parallel and gets
// its own driver from newDriver.
func RunContract(t *testing.T, newDriver NewDriver) {
	c := contract{newDriver: newDriver}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Ping", c.ping},
		{"CreateReportsSpecInInspect", c.createReportsSpec},
		{"CreateWritesFilesBeforeStart", c.createWritesFiles},
		{"CreateIsIdempotent", c.createIdempotent},
		{"CreateAdoptsAndStartsNotStarted", c.createAdoptsNotStarted},
		{"CreateRemovesAnAdoptedContainerItCannotStart", c.createRemovesUnstartable},
		{"CreateAdoptsExitedAsIs", c.createAdoptsExited},
		{"CreateConflictsWithForeign", c.createConflicts},
		{"CreateValidatesSpec", c.createValidates},
		{"CreateRefusesMoreCPUsThanTheHost", c.createRefusesCPUs},
		{"CreateWithMissingImage", c.createMissingImage},
		{"CreateWithMissingNetworkLeavesNothing", c.createMissingNetwork},
		{"NotFound", c.notFound},
		{"CallsHaveDeadlines", c.callsHaveDeadlines},
		{"Exec", c.exec},
		{"ExecTimeout", c.execTimeout},
		{"ExecBusyWhileATimedOutExecRuns", c.execBusy},
		{"ExecKilledAtTimeoutLeavesNoBusy", c.execKilled},
		{"PreparedExec", c.preparedExec},
		{"ExecDetachedEndsWithExecDie", c.execDetached},
		{"PreparedLaunchRunsOnDetached", c.preparedLaunch},
		{"List", c.list},
		{"LogsTail", c.logsTail},
		{"Remove", c.remove},
		{"RenameKeepsTheContainerAndFreesTheOldName", c.renameKeeps},
		{"RenameConflictsWithTheNameHolder", c.renameConflicts},
		{"RenameRefusesMissingSameAndInvalid", c.renameRefuses},
		{"EventsOrder", c.eventsOrder},
		{"EventsResyncAfterDisconnect", c.eventsResync},
		{"PullPresentIsNoop", c.pullPresent},
		{"PullSharesOnePull", c.pullShared},
		{"PullMissingTag", c.pullMissing},
		{"PullTimeout", c.pullTimeout},
		{"HostIdentityAbsentIsNotFound", c.identityAbsent},
		{"HostIdentityReadsBackTheOldestMarker", c.identityOldest},
		{"HostIdentityUnreachableIsNotAbsent", c.identityUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type contract struct {
	newDriver NewDriver
}

func (c contract) setup(t *testing.T, cfg Config) (dd.Driver, Env, context.Context) {
	t.Helper()
	d, env := c.newDriver(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	t.Cleanup(cancel)
	return d, env, ctx
}

// spec is a container of the suite's own, with a unique name and owner.
func spec(env Env, what string, s Script) dd.ContainerSpec {
	labels := maps.Clone(env.Labels())
	labels[OwnerLabel] = randomHex(8)
	return dd.ContainerSpec{
		Name:       "sdt-" + randomHex(6) + "-" + what,
		Image:      env.Image(),
		Labels:     labels,
		OwnerLabel: OwnerLabel,
		Cmd:        env.Command(s),
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustCreate(t *testing.T, ctx context.Context, d dd.Driver, s dd.ContainerSpec) dd.Container {
	t.Helper()
	c, err := d.CreateContainer(ctx, s)
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", s.Name, err)
	}
	return c
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitState(t *testing.T, ctx context.Context, d dd.Driver, name string, want dd.State) dd.Container {
	t.Helper()
	var c dd.Container
	eventually(t, 15*time.Second, name+" "+string(want), func() (bool, string) {
		var err error
		c, err = d.Inspect(ctx, name)
		return err == nil && c.State == want, fmt.Sprintf("state %q, err %v", c.State, err)
	})
	return c
}

func wantKind(t *testing.T, err error, kinds ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error of kinds %v, got nil", kinds)
	}
	for _, k := range kinds {
		if !errors.Is(err, k) {
			t.Errorf("error %q (%T) is not %v", err, err, k)
		}
	}
	if err.Error() == "" {
		t.Errorf("error %T has empty text", err)
	}
}

func (c contract) ping(t *testing.T) {
	d, _, ctx := c.setup(t, Config{})
	info, err := d.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.APIVersion == "" || info.ServerVersion == "" || info.NCPU < 1 {
		t.Errorf("Ping = %+v, want API and server versions and the host's CPU count", info)
	}
}
