package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
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
	s := spec(env, "inspect", Script{Sleep: Forever})
	s.Labels["sandbox.roboco.io/engine"] = "postgres"
	s.Env = map[string]string{"SANDBOX_FOO": "bar", "SANDBOX_EMPTY": ""}
	s.Tmpfs = map[string]string{"/scratch": "rw,size=16m"}
	s.MemoryBytes = 64 << 20
	s.NanoCPUs = 500_000_000
	s.PidsLimit = 64
	s.Network = net
	s.Aliases = []string{"db-" + randomHex(4)}
	s.CapAdd = []string{"CHOWN", "SETUID"}
	s.Log = dd.LogLimits{MaxSize: "1m", MaxFiles: 2}

	got := mustCreate(t, ctx, d, s)
	check := func(where string, got dd.Container) {
		t.Helper()
		if got.ID == "" || got.Name != s.Name || got.Image != s.Image {
			t.Errorf("%s: id %q name %q image %q, want name %q image %q", where, got.ID, got.Name, got.Image, s.Name, s.Image)
		}
		if got.State != dd.StateRunning || got.StartedAt.IsZero() || got.CreatedAt.IsZero() || !got.FinishedAt.IsZero() {
			t.Errorf("%s: state %q created %v started %v finished %v, want running", where, got.State, got.CreatedAt, got.StartedAt, got.FinishedAt)
		}
		for k, v := range s.Labels {
			if got.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", where, k, got.Labels[k], v)
			}
		}
		for _, kv := range []string{"SANDBOX_FOO=bar", "SANDBOX_EMPTY="} {
			if !slices.Contains(got.Env, kv) {
				t.Errorf("%s: env %v lacks %q", where, got.Env, kv)
			}
		}
		if !slices.Equal(got.Cmd, s.Cmd) {
			t.Errorf("%s: cmd %q, want %q", where, got.Cmd, s.Cmd)
		}
		if !maps.Equal(got.Tmpfs, s.Tmpfs) {
			t.Errorf("%s: tmpfs %v, want %v", where, got.Tmpfs, s.Tmpfs)
		}
		if got.MemoryBytes != s.MemoryBytes || got.NanoCPUs != s.NanoCPUs || got.PidsLimit != s.PidsLimit {
			t.Errorf("%s: memory %d cpus %d pids %d, want %d %d %d", where,
				got.MemoryBytes, got.NanoCPUs, got.PidsLimit, s.MemoryBytes, s.NanoCPUs, s.PidsLimit)
		}
		if got.Privileged || !slices.Contains(got.SecurityOpt, dd.SecurityOptNoNewPrivileges) || got.RestartPolicy != "no" || len(got.PublishedPorts) > 0 {
			t.Errorf("%s: privileged %v securityOpt %v restart %q ports %v, want unprivileged, no-new-privileges, no restart, no ports",
				where, got.Privileged, got.SecurityOpt, got.RestartPolicy, got.PublishedPorts)
		}
		if got.MemorySwapBytes != s.MemoryBytes {
			t.Errorf("%s: memory+swap %d, want %d (no swap)", where, got.MemorySwapBytes, s.MemoryBytes)
		}
		if !slices.Equal(got.CapDrop, []string{dd.CapAll}) || !slices.Equal(got.CapAdd, s.CapAdd) {
			t.Errorf("%s: capabilities dropped %v added %v, want %v and %v", where, got.CapDrop, got.CapAdd, []string{dd.CapAll}, s.CapAdd)
		}
		if got.LogDriver != dd.LogDriverJSONFile || got.Log != s.Log {
			t.Errorf("%s: log %s %+v, want %s %+v", where, got.LogDriver, got.Log, dd.LogDriverJSONFile, s.Log)
		}
		ep, ok := got.Networks[net]
		if !ok || ep.IPAddress == "" || !slices.Contains(ep.Aliases, s.Aliases[0]) {
			t.Errorf("%s: networks %+v, want %s with an IP and alias %s", where, got.Networks, net, s.Aliases[0])
		}
	}
	check("CreateContainer", got)
	byName, err := d.Inspect(ctx, s.Name)
	if err != nil {
		t.Fatal(err)
	}
	check("Inspect(name)", byName)
	byID, err := d.Inspect(ctx, got.ID)
	if err != nil || byID.ID != got.ID {
		t.Fatalf("Inspect(id) = %q, %v", byID.ID, err)
	}
}

// createWritesFiles: a secret delivered as a file is there when the main
// process starts (its first act is to print it), and shows nowhere in inspect.
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

func (c contract) exec(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec", Script{Sleep: Forever})
	s.Env = map[string]string{"SANDBOX_FOO": "bar"}
	mustCreate(t, ctx, d, s)

	for _, tc := range []struct {
		name  string
		spec  dd.ExecSpec
		check func(t *testing.T, r dd.ExecResult)
	}{
		{"exit code and streams", dd.ExecSpec{Cmd: env.Command(Script{Stdout: []string{"out"}, Stderr: []string{"err"}, Exit: 7})},
			func(t *testing.T, r dd.ExecResult) {
				if r.ExitCode != 7 || r.Stdout != "out\n" || r.Stderr != "err\n" || r.Truncated {
					t.Errorf("got %+v, want exit 7, out, err, not truncated", r)
				}
			}},
		{"own env and container env", dd.ExecSpec{
			Cmd: env.Command(Script{EchoEnv: []string{"SANDBOX_SECRET", "SANDBOX_FOO"}}),
			Env: map[string]string{"SANDBOX_SECRET": "s3cret"}},
			func(t *testing.T, r dd.ExecResult) {
				if r.ExitCode != 0 || r.Stdout != "s3cret\nbar\n" {
					t.Errorf("got %+v, want the exec's and the container's variables", r)
				}
			}},
		{"output keeps the tail", dd.ExecSpec{Cmd: env.Command(Script{FillStdout: 10000})},
			func(t *testing.T, r dd.ExecResult) {
				if len(r.Stdout) != dd.DefaultOutputLimit || !strings.HasSuffix(r.Stdout, "x\nEND\n") || !r.Truncated {
					t.Errorf("got %d bytes ending %q, truncated %v; want the last %d", len(r.Stdout), tail(r.Stdout), r.Truncated, dd.DefaultOutputLimit)
				}
			}},
		{"output limit", dd.ExecSpec{Cmd: env.Command(Script{FillStdout: 1000}), OutputLimit: 100},
			func(t *testing.T, r dd.ExecResult) {
				if len(r.Stdout) != 100 || !strings.HasSuffix(r.Stdout, "END\n") {
					t.Errorf("got %d bytes ending %q, want 100", len(r.Stdout), tail(r.Stdout))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := d.Exec(ctx, s.Name, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}

	t.Run("not running", func(t *testing.T) {
		s := spec(env, "exec-exited", Script{Exit: 0})
		mustCreate(t, ctx, d, s)
		waitState(t, ctx, d, s.Name, dd.StateExited)
		_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{})})
		wantKind(t, err, dd.ErrConflict)
	})
}

func tail(s string) string { return s[max(0, len(s)-12):] }

func (c contract) execTimeout(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "exec-timeout", Script{Sleep: Forever})
	mustCreate(t, ctx, d, s)
	cmd := env.Command(Script{Sleep: 20 * time.Second})
	start := time.Now()
	_, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: cmd, Timeout: 500 * time.Millisecond})
	wantKind(t, err, dd.ErrTimeout)
	want := fmt.Sprintf("exec %s [%s]: timeout after 500ms: context deadline exceeded", s.Name, cmd[0])
	if err != nil && err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Exec took %v to time out after 500ms", took)
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

// collect reads events until one of type until arrives.
func collect(t *testing.T, ch <-chan dd.Event, until dd.EventType, within time.Duration) []dd.Event {
	t.Helper()
	var got []dd.Event
	timeout := time.After(within)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("event stream closed; got %v", types(got))
			}
			got = append(got, e)
			if e.Type == until {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s event within %v; got %v", until, within, types(got))
		}
	}
}

func types(es []dd.Event) []dd.EventType {
	out := make([]dd.EventType, len(es))
	for i, e := range es {
		out[i] = e.Type
	}
	return out
}

func (c contract) eventsOrder(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "events", Script{Exit: 3})
	byLabel := d.Events(ctx, dd.EventFilter{Labels: map[string]string{OwnerLabel: s.Labels[OwnerLabel]}})
	byName := d.Events(ctx, dd.EventFilter{Names: []string{s.Name}})
	created := mustCreate(t, ctx, d, s)

	got := collect(t, byLabel, dd.EventDie, 15*time.Second)
	if err := d.Remove(ctx, s.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	got = append(got, collect(t, byLabel, dd.EventDestroy, 15*time.Second)...)
	if want := []dd.EventType{dd.EventCreate, dd.EventStart, dd.EventDie, dd.EventDestroy}; !slices.Equal(types(got), want) {
		t.Fatalf("events %v, want %v", types(got), want)
	}
	for i, e := range got {
		if e.ID != created.ID || e.Name != s.Name || e.Labels[OwnerLabel] != s.Labels[OwnerLabel] || e.Time.IsZero() {
			t.Errorf("event %d = %+v: want id %s, name %s, our labels, a time", i, e, created.ID, s.Name)
		}
		if i > 0 && e.Time.Before(got[i-1].Time) {
			t.Errorf("event %d (%s) is older than event %d", i, e.Type, i-1)
		}
		if _, leaked := e.Labels["exitCode"]; leaked {
			t.Errorf("event %d labels carry Docker's attributes: %v", i, e.Labels)
		}
	}
	if got[2].ExitCode != 3 {
		t.Errorf("die exit code %d, want 3", got[2].ExitCode)
	}
	named := collect(t, byName, dd.EventDestroy, 15*time.Second)
	if want := []dd.EventType{dd.EventCreate, dd.EventStart, dd.EventDie, dd.EventDestroy}; !slices.Equal(types(named), want) {
		t.Errorf("events by name %v, want %v", types(named), want)
	}
}

func (c contract) eventsResync(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	labels := map[string]string{"sandbox.roboco.io/test-group": randomHex(4)}
	ch := d.Events(ctx, dd.EventFilter{Labels: labels})
	mk := func() dd.Container {
		s := spec(env, "resync", Script{Sleep: Forever})
		maps.Copy(s.Labels, labels)
		return mustCreate(t, ctx, d, s)
	}
	first := mk()
	if e := collect(t, ch, dd.EventStart, 15*time.Second); e[len(e)-1].ID != first.ID {
		t.Fatalf("start event for %s, want %s", e[len(e)-1].ID, first.ID)
	}

	reconnect := env.Disconnect(t)
	eventually(t, 10*time.Second, "Ping failing while disconnected", func() (bool, string) {
		_, err := d.Ping(ctx)
		return errors.Is(err, dd.ErrUnavailable) && err.Error() != "", fmt.Sprint(err)
	})
	reconnect()

	got := collect(t, ch, dd.EventResync, 15*time.Second)
	if last := got[len(got)-1]; last.ID != "" || last.Time.IsZero() {
		t.Errorf("resync event %+v: want only a time", last)
	}
	// The outage was announced before the resync, exactly once.
	if n := slices.IndexFunc(got, func(e dd.Event) bool { return e.Type == dd.EventLost }); n < 0 {
		t.Errorf("no %s event before the resync; got %v", dd.EventLost, types(got))
	} else if got[n].ID != "" || got[n].Time.IsZero() {
		t.Errorf("lost event %+v: want only a time", got[n])
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(e dd.Event) bool { return e.Type != dd.EventLost })); n != 1 {
		t.Errorf("%d %s events for one outage, want 1; got %v", n, dd.EventLost, types(got))
	}
	second := mk()
	for {
		e := collect(t, ch, dd.EventStart, 15*time.Second)
		if e[len(e)-1].ID == second.ID {
			break
		}
	}
}

func (c contract) pullPresent(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	called := false
	if err := d.PullImage(ctx, env.Image(), func(dd.PullProgress) { called = true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Errorf("progress reported for an image already present")
	}
	ok, err := d.ImagePresent(ctx, env.Image())
	if err != nil || !ok {
		t.Errorf("ImagePresent(%s) = %v, %v; want true", env.Image(), ok, err)
	}
}

func (c contract) pullShared(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	reg := env.Registry(t)
	ref := reg.Push(t, "shared")
	if ok, err := d.ImagePresent(ctx, ref); err != nil || ok {
		t.Fatalf("ImagePresent(%s) before the pull = %v, %v; want false", ref, ok, err)
	}
	release := reg.Hold(t, ref)

	const callers = 3
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		attached = map[int]bool{}
		last     = map[int]dd.PullProgress{}
		shared   int
		errs     = make([]error, callers)
	)
	pull := func(ctx context.Context, i int) error {
		return d.PullImage(ctx, ref, func(p dd.PullProgress) {
			mu.Lock()
			defer mu.Unlock()
			if !attached[i] && p.Shared {
				shared++
			}
			attached[i] = true
			last[i] = p
		})
	}
	for i := range callers {
		wg.Go(func() { errs[i] = pull(ctx, i) })
		if i == 0 {
			// The first caller's pull must reach the registry before the
			// others join, or they could all be "first".
			eventually(t, 15*time.Second, "first pull at the registry", func() (bool, string) {
				return reg.Pulls(ref) >= 1, fmt.Sprint(reg.Pulls(ref))
			})
		}
	}
	// A caller that gives up must not take the pull down with it.
	quitter, quit := context.WithCancel(ctx)
	quitErr := make(chan error, 1)
	go func() { quitErr <- pull(quitter, callers) }()
	eventually(t, 15*time.Second, "all callers attached", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(attached) == callers+1, fmt.Sprint(attached)
	})
	quit()
	select {
	case err := <-quitErr:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), ref) {
			t.Errorf("cancelled caller got %v, want context.Canceled naming %s", err, ref)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("cancelled caller still waiting")
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if n := reg.Pulls(ref); n != 1 {
		t.Errorf("registry served %d pulls of %s, want 1 shared pull", n, ref)
	}
	if want := callers; shared != want { // callers 1..n-1 and the quitter
		t.Errorf("%d callers were told they joined a shared pull, want %d", shared, want)
	}
	t.Logf("last progress of the first caller: %+v", last[0])
	if p := last[0]; p.Ref != ref || p.Layers == 0 || p.LayersDone != p.Layers {
		t.Errorf("last progress %+v: want all layers of %s done", p, ref)
	}
	if ok, err := d.ImagePresent(ctx, ref); err != nil || !ok {
		t.Errorf("ImagePresent after the pull = %v, %v; want true", ok, err)
	}
}

func (c contract) pullMissing(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	ref := env.Registry(t).MissingTag(t, "missing")
	err := d.PullImage(ctx, ref, nil)
	t.Logf("pull of a missing tag: %v", err)
	wantKind(t, err, dd.ErrPullFailed, dd.ErrNotFound)
	if err != nil && (!strings.Contains(err.Error(), "manifest unknown") || !strings.HasPrefix(err.Error(), "pull "+ref+": ")) {
		t.Errorf("error %q: want %q and the registry's message (manifest unknown)", err, "pull "+ref+": ")
	}
}

func (c contract) pullTimeout(t *testing.T) {
	d, env, ctx := c.setup(t, Config{PullTimeout: time.Second})
	reg := env.Registry(t)
	ref := reg.Push(t, "slow")
	reg.Hold(t, ref)
	err := d.PullImage(ctx, ref, nil)
	wantKind(t, err, dd.ErrPullFailed, dd.ErrTimeout)
	if want := "pull " + ref + ": timeout after 1s: context deadline exceeded"; err != nil && err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
