package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ctr is one fake container.
type ctr struct {
	c        dd.Container
	script   Script
	scripted bool
	// gen changes with every start and exit, so that a timer armed for an
	// earlier run does nothing.
	gen  int
	logs []string // lines, each ending in "\n"
	// files were written into the container before its first start.
	files map[string][]byte
}

func (c *ctr) snapshot() dd.Container {
	out := c.c
	out.Labels = maps.Clone(c.c.Labels)
	out.Env = slices.Clone(c.c.Env)
	out.Cmd = slices.Clone(c.c.Cmd)
	out.Tmpfs = maps.Clone(c.c.Tmpfs)
	out.SecurityOpt = slices.Clone(c.c.SecurityOpt)
	out.CapAdd, out.CapDrop = slices.Clone(c.c.CapAdd), slices.Clone(c.c.CapDrop)
	out.Mounts = slices.Clone(c.c.Mounts)
	out.Networks = make(map[string]dd.Endpoint, len(c.c.Networks))
	for k, v := range c.c.Networks {
		v.Aliases = slices.Clone(v.Aliases)
		out.Networks[k] = v
	}
	return out
}

// resolve finds a container the way Docker does: full ID, then exact
// name, then unique ID prefix. Callers hold f.mu.
func (f *Driver) resolve(nameOrID string) *ctr {
	if nameOrID == "" {
		return nil
	}
	if c, ok := f.containers[nameOrID]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.c.Name == strings.TrimPrefix(nameOrID, "/") {
			return c
		}
	}
	var found *ctr
	for id, c := range f.containers {
		if strings.HasPrefix(id, nameOrID) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// refsOf is what faults may match for a call about nameOrID.
func (f *Driver) refsOf(nameOrID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	refs := []string{nameOrID}
	if c := f.resolve(nameOrID); c != nil {
		refs = append(refs, c.c.Name, c.c.ID)
	}
	return refs
}

// CreateContainer creates and starts, or adopts; see dd.Driver.
func (f *Driver) CreateContainer(ctx context.Context, spec dd.ContainerSpec) (dd.Container, error) {
	if err := f.enter(ctx, VerbCreateContainer, spec.Name); err != nil {
		return dd.Container{}, err
	}
	if err := spec.Validate(); err != nil {
		return dd.Container{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if existing := f.resolveName(spec.Name); existing != nil {
		if !spec.Owns(existing.c) {
			return dd.Container{}, &dd.ConflictError{
				Name:       spec.Name,
				OwnerLabel: spec.OwnerLabel,
				Want:       spec.Labels[spec.OwnerLabel],
				Existing:   existing.snapshot(),
			}
		}
		if existing.c.State == dd.StateCreated {
			existing.write(spec.Files)
			f.start(existing)
		}
		return existing.snapshot(), nil
	}
	c, err := f.create(spec)
	if err != nil {
		return dd.Container{}, err
	}
	if err := f.startFailure(c); err != nil {
		f.destroy(c) // as the real driver removes what it made and could not start
		return dd.Container{}, err
	}
	c.write(spec.Files)
	f.start(c)
	return c.snapshot(), nil
}

// startFailure is why Docker would refuse to start c: its network is gone, or
// an AtStart fault says so. Callers hold f.mu.
func (f *Driver) startFailure(c *ctr) error {
	for network := range c.c.Networks {
		if !f.networks[network] {
			return dd.NewError("start", c.c.Name, dd.ErrNotFound,
				fmt.Errorf("Error response from daemon: network %s not found", network))
		}
	}
	if ft := f.matchFault(VerbCreateContainer, []string{c.c.Name}, true); ft != nil && ft.Err != nil {
		return faultError("start", c.c.Name, ft.Err)
	}
	return nil
}

// write puts files into the container, as the real driver does between
// create and start.
func (c *ctr) write(files []dd.File) {
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	for _, file := range files {
		c.files[file.Path] = slices.Clone(file.Content)
	}
}

func (f *Driver) resolveName(name string) *ctr {
	for _, c := range f.containers {
		if c.c.Name == name {
			return c
		}
	}
	return nil
}

// create makes a container in state created. Callers hold f.mu.
func (f *Driver) create(spec dd.ContainerSpec) (*ctr, error) {
	if spec.NanoCPUs > int64(f.cpus)*1e9 {
		return nil, dd.NewError("create", spec.Name, dd.ErrInvalid, fmt.Errorf(
			"Error response from daemon: Range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", f.cpus, f.cpus))
	}
	key, err := dd.NormalizeRef(spec.Image)
	if err != nil {
		return nil, dd.NewError("create", spec.Name, dd.ErrInvalid, err)
	}
	img, ok := f.images[key]
	if !ok {
		return nil, dd.NewError("create", spec.Name, dd.ErrNotFound,
			fmt.Errorf("Error response from daemon: No such image: %s", spec.Image))
	}
	// Note: a missing network is noticed at start, as Docker does (startFailure).
	network := cmp.Or(spec.Network, "bridge")
	id := randomID()
	env := slices.Clone(img.Env)
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	c := &ctr{c: dd.Container{
		ID:            id,
		Name:          spec.Name,
		Image:         spec.Image,
		ImageID:       "sha256:" + key,
		Labels:        maps.Clone(spec.Labels),
		State:         dd.StateCreated,
		CreatedAt:     time.Now(),
		Networks:      map[string]dd.Endpoint{network: {Aliases: slices.Clone(spec.Aliases)}},
		Env:           append(env, spec.EnvList()...),
		Cmd:           slices.Clone(spec.Cmd),
		Tmpfs:         maps.Clone(spec.Tmpfs),
		MemoryBytes:   spec.MemoryBytes,
		NanoCPUs:      spec.NanoCPUs,
		PidsLimit:     spec.PidsLimit,
		SecurityOpt:   []string{dd.SecurityOptNoNewPrivileges},
		RestartPolicy: "no",
		// As the real driver makes it: no swap, every capability dropped but
		// CapAdd, a bounded json-file log.
		MemorySwapBytes: spec.MemoryBytes,
		CapDrop:         []string{dd.CapAll},
		CapAdd:          slices.Clone(spec.CapAdd),
		LogDriver:       dd.LogDriverJSONFile,
		Log:             spec.Log,
	}}
	c.script, c.scripted = parseScript(spec.Cmd)
	for _, path := range img.Volumes {
		if _, covered := spec.Tmpfs[path]; covered {
			continue // as in Docker, a tmpfs at a VOLUME path replaces the anonymous volume
		}
		v := Volume{Name: randomID(), Container: id, Destination: path}
		f.volumes[v.Name] = v
		c.c.Mounts = append(c.c.Mounts, dd.Mount{Type: "volume", Name: v.Name, Destination: path})
	}
	f.containers[id] = c
	f.emit(c, dd.EventCreate, 0)
	return c, nil
}

// start runs the container's script. Callers hold f.mu.
func (f *Driver) start(c *ctr) {
	c.gen++
	c.c.State = dd.StateRunning
	c.c.StartedAt = time.Now()
	c.c.FinishedAt = time.Time{}
	c.c.ExitCode = 0
	c.c.OOMKilled = false
	for name, ep := range c.c.Networks {
		ep.IPAddress = fmt.Sprintf("172.30.%d.%d", f.nextIP/250, f.nextIP%250+2)
		f.nextIP++
		c.c.Networks[name] = ep
	}
	f.emit(c, dd.EventStart, 0)
	if !c.scripted {
		return
	}
	stdout, stderr := c.script.output(c.c.Env, c.files)
	c.logs = append(c.logs, lines(stdout)...)
	c.logs = append(c.logs, lines(stderr)...)
	switch s := c.script.Sleep; {
	case s == Forever:
	case s <= 0:
		f.exit(c, c.script.Exit, false)
	default:
		f.exitLater(c, c.script.Exit, s)
	}
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitAfterSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// exitLater arms a timer for the current run. Callers hold f.mu.
func (f *Driver) exitLater(c *ctr, code int, after time.Duration) {
	gen := c.gen
	time.AfterFunc(after, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if c.gen == gen && f.containers[c.c.ID] == c {
			f.exit(c, code, false)
		}
	})
}

// exit ends a running container. Callers hold f.mu.
func (f *Driver) exit(c *ctr, code int, oom bool) {
	if c.c.State != dd.StateRunning {
		return
	}
	c.gen++
	c.c.State = dd.StateExited
	c.c.ExitCode = code
	c.c.OOMKilled = oom
	c.c.FinishedAt = time.Now()
	for name, ep := range c.c.Networks {
		ep.IPAddress = ""
		c.c.Networks[name] = ep
	}
	if oom {
		f.emit(c, dd.EventOOM, 0)
	}
	f.emit(c, dd.EventDie, code)
}

// destroy removes a container and its anonymous volumes. Callers hold f.mu.
func (f *Driver) destroy(c *ctr) {
	if c.c.State == dd.StateRunning {
		code := 0
		if c.scripted {
			code = 143 // what the scripted process's SIGTERM trap exits with
		}
		f.exit(c, code, false)
	}
	c.gen++
	for _, m := range c.c.Mounts {
		delete(f.volumes, m.Name)
	}
	delete(f.containers, c.c.ID)
	f.emit(c, dd.EventDestroy, 0)
}

// Inspect returns one container by name or ID.
func (f *Driver) Inspect(ctx context.Context, nameOrID string) (dd.Container, error) {
	if err := f.enter(ctx, VerbInspect, f.refsOf(nameOrID)...); err != nil {
		return dd.Container{}, err
	}
	if nameOrID == "" {
		return dd.Container{}, dd.NewError("inspect", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return dd.Container{}, noSuchContainer("inspect", nameOrID)
	}
	return c.snapshot(), nil
}

// List returns the containers carrying all labels, newest first, as Docker does.
func (f *Driver) List(ctx context.Context, labels map[string]string) ([]dd.ContainerSummary, error) {
	if err := f.enter(ctx, VerbList); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []dd.ContainerSummary{}
	for _, c := range f.containers {
		if !hasLabels(c.c.Labels, labels) {
			continue
		}
		out = append(out, dd.ContainerSummary{
			ID:        c.c.ID,
			Name:      c.c.Name,
			Image:     c.c.Image,
			Labels:    maps.Clone(c.c.Labels),
			State:     c.c.State,
			CreatedAt: c.c.CreatedAt.Truncate(time.Second), // Docker lists whole seconds
		})
	}
	slices.SortFunc(out, func(a, b dd.ContainerSummary) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ExecRule makes execs behave as a test needs, e.g. a probe that never
// succeeds.
type ExecRule struct {
	// Container restricts the rule to one container name or ID ("": any).
	Container string
	// Result is returned instead of running the command.
	Result dd.ExecResult
	// Hang makes the exec never finish, so it times out.
	Hang bool
	// Times is how many execs it applies to (0: until cleared).
	Times int
}

type execRule struct {
	ExecRule
	left int
}

// OnExec adds an exec rule (the latest added wins); clear removes it.
func (f *Driver) OnExec(r ExecRule) (clear func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &execRule{ExecRule: r, left: r.Times}
	f.execRules = append([]*execRule{e}, f.execRules...)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.execRules = slices.DeleteFunc(f.execRules, func(x *execRule) bool { return x == e })
	}
}

func (f *Driver) matchExec(c *ctr) *ExecRule {
	for i, r := range f.execRules {
		if r.Container != "" && r.Container != c.c.Name && r.Container != c.c.ID {
			continue
		}
		out := r.ExecRule
		if r.Times > 0 {
			r.left--
			if r.left == 0 {
				f.execRules = append(f.execRules[:i], f.execRules[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

// Exec runs a Script command (others exit 0 at once), or what an ExecRule says.
func (f *Driver) Exec(ctx context.Context, nameOrID string, spec dd.ExecSpec) (dd.ExecResult, error) {
	ref := dd.ExecRef(nameOrID, spec.Cmd)
	timeout := cmp.Or(spec.Timeout, dd.DefaultExecTimeout)
	ectx, cancel := context.WithTimeout(ctx, timeout)
	err := f.enter(ectx, VerbExec, f.refsOf(nameOrID)...)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
		return dd.ExecResult{}, dd.TimeoutError("exec", ref, timeout)
	case err != nil:
		return dd.ExecResult{}, err
	}
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return dd.ExecResult{}, dd.NewError("exec", ref, dd.ErrInvalid, errors.New("need a container and a command"))
	}
	limit := cmp.Or(spec.OutputLimit, dd.DefaultOutputLimit)

	f.mu.Lock()
	c := f.resolve(nameOrID)
	if c == nil {
		f.mu.Unlock()
		return dd.ExecResult{}, noSuchContainer("exec", ref)
	}
	if c.c.State != dd.StateRunning {
		f.mu.Unlock()
		return dd.ExecResult{}, dd.NewError("exec", ref, dd.ErrConflict,
			fmt.Errorf("Error response from daemon: Container %s is not running", c.c.ID))
	}
	rule := f.matchExec(c)
	env := append(slices.Clone(c.c.Env), dd.ContainerSpec{Env: spec.Env}.EnvList()...)
	files := maps.Clone(c.files)
	f.mu.Unlock()

	var res dd.ExecResult
	var runFor time.Duration
	hang := false
	switch s, ok := parseScript(spec.Cmd); {
	case rule != nil:
		res, hang = rule.Result, rule.Hang
	case ok:
		res.Stdout, res.Stderr = s.output(env, files)
		res.ExitCode = s.Exit
		runFor = s.Sleep
		hang = s.Sleep == Forever || s.Sleep > timeout
	}
	if hang {
		runFor = timeout
	}
	if runFor > 0 {
		t := time.NewTimer(runFor)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return dd.ExecResult{}, dd.NewError("exec", ref, kindOfCtx(ctx.Err()), ctx.Err())
		case <-t.C:
		}
	}
	if hang {
		return dd.ExecResult{}, dd.TimeoutError("exec", ref, timeout)
	}
	var cut1, cut2 bool
	res.Stdout, cut1 = keepTail(res.Stdout, limit)
	res.Stderr, cut2 = keepTail(res.Stderr, limit)
	res.Truncated = res.Truncated || cut1 || cut2
	return res, nil
}

func keepTail(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return s[len(s)-limit:], true
}

// LogsTail returns the last lines the container's script wrote.
func (f *Driver) LogsTail(ctx context.Context, nameOrID string, n int) (string, error) {
	if err := f.enter(ctx, VerbLogsTail, f.refsOf(nameOrID)...); err != nil {
		return "", err
	}
	if nameOrID == "" {
		return "", dd.NewError("logs", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return "", noSuchContainer("logs", nameOrID)
	}
	if n <= 0 {
		n = 20
	}
	out, _ := keepTail(strings.Join(c.logs[max(0, len(c.logs)-n):], ""), 16<<10)
	return out, nil
}

// Remove stops and removes the container and its anonymous volumes; absent is success.
func (f *Driver) Remove(ctx context.Context, nameOrID string, stopTimeout time.Duration) error {
	if err := f.enterWithin(ctx, VerbRemove, max(0, stopTimeout)+f.callTimeout, f.refsOf(nameOrID)...); err != nil {
		return err
	}
	if nameOrID == "" {
		return dd.NewError("remove", nameOrID, dd.ErrInvalid, errors.New("empty container name"))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.resolve(nameOrID); c != nil {
		f.destroy(c)
	}
	return nil
}

// SeedContainer puts a container on the host without a driver call (not
// counted, no faults, no ownership label needed): an owner agent, a
// foreign container, a leftover. Its image is added if missing.
func (f *Driver) SeedContainer(spec dd.ContainerSpec, start bool) (dd.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.resolveName(spec.Name) != nil {
		return dd.Container{}, dd.NewError("seed", spec.Name, dd.ErrConflict, errors.New("name in use"))
	}
	if key, err := dd.NormalizeRef(spec.Image); err == nil {
		if _, ok := f.images[key]; !ok {
			f.images[key] = Image{}
		}
	}
	if spec.Network != "" {
		f.networks[spec.Network] = true
	}
	c, err := f.create(spec)
	if err != nil {
		return dd.Container{}, err
	}
	c.write(spec.Files)
	if start {
		f.start(c)
	}
	return c.snapshot(), nil
}

// Peek returns a container without a driver call.
func (f *Driver) Peek(nameOrID string) (dd.Container, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return dd.Container{}, false
	}
	return c.snapshot(), true
}

// File returns a file written into a container (ContainerSpec.Files), without
// a driver call.
func (f *Driver) File(nameOrID, path string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return nil, false
	}
	content, ok := c.files[path]
	return slices.Clone(content), ok
}

// ExitContainer makes a running container exit with code after a delay
// (0: now), emitting a die event.
func (f *Driver) ExitContainer(nameOrID string, code int, after time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("exit", nameOrID)
	}
	if after <= 0 {
		f.exit(c, code, false)
	} else {
		f.exitLater(c, code, after)
	}
	return nil
}

// AppendLogs adds lines to a container's log, as its process would print them.
func (f *Driver) AppendLogs(nameOrID string, lines ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("logs", nameOrID)
	}
	for _, l := range lines {
		c.logs = append(c.logs, l+"\n")
	}
	return nil
}

// OOMKill makes a running container die of OOM now (exit 137, oom and die events).
func (f *Driver) OOMKill(nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("oom", nameOrID)
	}
	f.exit(c, 137, true)
	return nil
}

// DeleteContainer removes a container behind the driver's back, as
// someone's `docker rm -fv` would (events included).
func (f *Driver) DeleteContainer(nameOrID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer("delete", nameOrID)
	}
	f.destroy(c)
	return nil
}
