package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// defaultDockerHost is where Docker listens when DOCKER_HOST is unset.
const defaultDockerHost = "unix:///var/run/docker.sock"

// settings is everything the operator sets on the command line.
type settings struct {
	dockerHost           string
	dockerStartupTimeout time.Duration
	pullTimeout          time.Duration

	// images holds the --<engine>-image and --<engine>-kitchen-sink-image values.
	images map[string]*engine.Images

	options                 controllers.Options
	maxConcurrentReconciles int
	sweep                   bool

	metricsAddr, probeAddr  string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

	zap zap.Options
}

// group is a titled section of --help.
type group struct {
	title string
	// intro is printed under the title (optional).
	intro string
	// flags are printed in this order; a name ending in "*" takes every flag with that prefix.
	flags []string
}

// flagSet is the manager's command line: the flags, their groups for --help, and
// the argument name each one shows.
type flagSet struct {
	*flag.FlagSet
	groups  []group
	argName map[string]string
}

func imageFlag(e engine.Engine) string       { return e.Name() + "-image" }
func kitchenSinkFlag(e engine.Engine) string { return e.Name() + "-kitchen-sink-image" }

// hasKitchenSink says whether the engine has features, and so a kitchen-sink image.
func hasKitchenSink(e engine.Engine) bool { return len(e.Features()) > 0 }

// newFlagSet binds every flag to s, which holds the defaults on entry.
func newFlagSet(s *settings, env func(string) string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet("manager", flag.ContinueOnError), argName: map[string]string{}}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	str := func(p *string, name, arg, def, usage string) {
		fs.StringVar(p, name, def, usage)
		fs.argName[name] = arg
	}
	dur := func(p *time.Duration, name string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage)
		fs.argName[name] = "duration"
	}
	qty := func(p *resource.Quantity, name, usage string) {
		fs.Var((*quantityValue)(p), name, usage)
		fs.argName[name] = "quantity"
	}

	// Docker host.
	dockerHost := env("DOCKER_HOST")
	if dockerHost == "" {
		dockerHost = defaultDockerHost
	}
	str(&s.dockerHost, "docker-host", "url", dockerHost,
		"The Docker daemon that runs the sandbox containers: unix:///path/to/docker.sock or tcp://host:port. "+
			"The default is $DOCKER_HOST when set, else "+defaultDockerHost+". TLS for tcp:// comes from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.")
	dur(&s.dockerStartupTimeout, "docker-startup-timeout", 30*time.Second,
		"How long start-up waits for Docker to answer before giving up with an error.")
	dur(&s.pullTimeout, "pull-timeout", dd.DefaultPullTimeout,
		"The longest one image pull may take; a pull that takes longer fails and is retried with backoff.")
	dur(&s.options.StopTimeout, "stop-timeout", s.options.StopTimeout,
		"On teardown, how long a service container gets between SIGTERM and SIGKILL.")

	// Images, one pair per engine of the registry.
	s.images = map[string]*engine.Images{}
	var imageFlags []string
	for _, e := range engine.All() {
		def := e.Images()
		imgs := &engine.Images{}
		s.images[e.Name()] = imgs
		str(&imgs.Default, imageFlag(e), "ref", def.Default,
			fmt.Sprintf("The image of %s services that ask for no features.", e.Name()))
		imageFlags = append(imageFlags, imageFlag(e))
		if hasKitchenSink(e) {
			str(&imgs.KitchenSink, kitchenSinkFlag(e), "ref", def.KitchenSink,
				fmt.Sprintf("The image of %s services that ask for any feature (%s); it must provide all of them.",
					e.Name(), strings.Join(e.Features(), ", ")))
			imageFlags = append(imageFlags, kitchenSinkFlag(e))
		}
	}

	str(&s.options.Instance, "instance", "name", s.options.Instance,
		"The name of this control plane on the Docker host, written on every container it creates (label sandbox.roboco.io/instance). "+
			"Give each control plane that shares a Docker host its own: a container of another instance is never adopted, "+
			"judged stale or swept as an orphan by this one.")

	// What a Sandbox gets when it does not say.
	str(&s.options.DefaultNetwork, "default-network", "name", s.options.DefaultNetwork,
		`The Docker network services join when spec.network is empty; they get their container name as DNS alias there. `+
			`Empty means Docker's default bridge, where agents reach services by IP address.`)
	str(&s.options.OwnerTemplate, "owner-template", "template", s.options.OwnerTemplate,
		"The owner container of a Sandbox whose spec.owner.containerName is empty; {agentID} is replaced by spec.agentID.")
	dur(&s.options.GracePeriod, "grace-period", s.options.GracePeriod,
		"How long an owner container may be missing before its Sandbox is deleted, when spec.owner.gracePeriod is unset.")
	dur(&s.options.ResyncPeriod, "resync-period", s.options.ResyncPeriod,
		"How often a settled Sandbox is checked again (±10% jitter). Docker events make changes visible at once; this is the backstop.")
	fs.BoolVar(&s.sweep, "sweep", true,
		"Run the orphan sweep: remove this instance's sandbox containers whose Sandbox no longer exists, and upstream's "+
			"legacy containers whose owner container is gone, once older than the grace period.")
	dur(&s.options.SweepInterval, "sweep-interval", s.options.SweepInterval,
		"How often the orphan sweep runs (±10% jitter); Docker events and Sandbox deletions trigger it in between.")
	fs.Var(&probeDeadlinesValue{m: &s.options.ProbeDeadlines}, "probe-deadline",
		"How long a service may take to answer its readiness probe after start, as engine=duration pairs separated by commas "+
			"(e.g. postgres=120s,mongo=90s), for slow hosts. Engines not listed keep their own: "+engineDeadlines()+".")
	fs.argName["probe-deadline"] = "engine=duration,..."

	// Resources.
	qty(&s.options.DefaultMemory, "default-memory", "The memory limit of a service that sets no spec.services[].resources.memory (at least 6Mi).")
	qty(&s.options.MaxMemory, "max-memory", "The largest memory limit a service may ask for; a larger request fails the Sandbox with a message.")
	qty(&s.options.DefaultCPU, "default-cpu", "The CPU limit, in cores, of a service that sets no spec.services[].resources.cpu (e.g. 1 or 500m).")
	qty(&s.options.MaxCPU, "max-cpu", "The largest CPU limit a service may ask for.")
	fs.Int64Var(&s.options.PidsLimit, "pids-limit", s.options.PidsLimit, "The most processes one service container may run.")
	fs.argName["pids-limit"] = "n"

	// The manager process.
	fs.IntVar(&s.maxConcurrentReconciles, "max-concurrent-reconciles", 4,
		"How many Sandboxes are reconciled at once. Pulls and probe waits do not hold a worker, so a few go a long way.")
	fs.argName["max-concurrent-reconciles"] = "n"
	str(&s.metricsAddr, "metrics-bind-address", "addr", ":8080",
		`Where Prometheus metrics are served (/metrics, plain HTTP). "0" turns them off.`)
	str(&s.probeAddr, "health-probe-bind-address", "addr", ":8081",
		`Where /healthz (the process runs) and /readyz (Docker answers) are served. "0" turns them off.`)
	fs.BoolVar(&s.leaderElect, "leader-elect", false,
		"Elect a leader through a coordination.k8s.io Lease so that only one of several replicas acts. "+
			"Replicas that are not the leader wait, ready to take over.")
	str(&s.leaderElectionID, "leader-election-id", "name", "sandbox-controller.sandbox.roboco.io",
		"The name of the Lease. Managers that share it share one leader.")
	str(&s.leaderElectionNamespace, "leader-election-namespace", "namespace", "",
		"The namespace of the Lease. Default: the manager's own namespace when it runs in a Pod; required outside a cluster.")
	dur(&s.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a Lease holds after its last renewal: the longest a new leader waits when the old one died.")
	dur(&s.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it gives up leadership (and exits). Less than the lease duration.")
	dur(&s.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How often candidates try to acquire, and the leader to renew, the Lease.")
	config.RegisterFlags(fs.FlagSet)
	fs.describe(config.KubeconfigFlagName, "path",
		"The kubeconfig of the cluster to watch. Default: $KUBECONFIG, else the Pod's service account, else ~/.kube/config.")

	// Logging: controller-runtime's zap flags, described for this manager.
	s.zap.BindFlags(fs.FlagSet)
	fs.describe("zap-devel", "",
		"Development logging: console encoder, debug level, stack traces from warnings. Without it: JSON, info level, stack traces from errors. (default false)")
	fs.describe("zap-encoder", "json|console", "The log format. Default: json, or console with --zap-devel.")
	fs.describe("zap-log-level", "level",
		"The least severe level logged: debug, info, error, or an integer n > 0 for debug verbosity n. Default: info, or debug with --zap-devel.")
	fs.describe("zap-stacktrace-level", "level",
		"The level from which stack traces are logged: info, error or panic. Default: error, or warn with --zap-devel.")
	fs.describe("zap-time-encoding", "format",
		"How log timestamps are written: epoch, millis, nano, iso8601, rfc3339 or rfc3339nano. (default rfc3339)")

	fs.groups = []group{
		{title: "Docker host", flags: []string{"docker-host", "instance", "docker-startup-timeout", "pull-timeout", "stop-timeout"}},
		{title: "Images", intro: "Images are the operator's choice, never a Sandbox author's. " +
			"A service with any feature runs its engine's kitchen-sink image.", flags: imageFlags},
		{title: "Sandbox defaults", flags: []string{"default-network", "owner-template", "grace-period", "resync-period", "sweep", "sweep-interval", "probe-deadline"}},
		{title: "Resources per service container", flags: []string{"default-memory", "max-memory", "default-cpu", "max-cpu", "pids-limit"}},
		{title: "Manager", flags: []string{"kubeconfig", "max-concurrent-reconciles", "metrics-bind-address", "health-probe-bind-address",
			"leader-elect", "leader-election-id", "leader-election-namespace",
			"leader-election-lease-duration", "leader-election-renew-deadline", "leader-election-retry-period"}},
		{title: "Logging (controller-runtime's zap options)", flags: []string{"zap-*"}},
	}
	return fs
}

// explain rewrites the flag package's parse errors in this manager's spelling
// (--name) and suggests the flag meant when a name is unknown.
func (fs *flagSet) explain(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		if near := fs.nearest(name); near != "" {
			msg += " (did you mean --" + near + "?)"
		}
		return errors.New(msg)
	}
	msg = strings.Replace(msg, " for flag -", " for flag --", 1)
	return errors.New(msg)
}

// nearest is the defined flag closest to name, if it is close.
func (fs *flagSet) nearest(name string) string {
	best, bestDist := "", len(name)/3+2
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// describe replaces a flag's help text and argument name (for flags bound by libraries).
func (fs *flagSet) describe(name, arg, usage string) {
	if f := fs.Lookup(name); f != nil {
		f.Usage = usage
		fs.argName[name] = arg
	}
}

// engineDeadlines lists the engines' own probe deadlines.
func engineDeadlines() string {
	var parts []string
	for _, e := range engine.All() {
		parts = append(parts, e.Name()+"="+e.ProbeDeadline().String())
	}
	return strings.Join(parts, ", ")
}

// parseSettings parses args into settings and checks them. env reads the
// environment (os.Getenv outside tests). On -h/--help it writes the help to
// stdout and returns flag.ErrHelp.
func parseSettings(args []string, env func(string) string, stdout io.Writer) (*settings, error) {
	s := &settings{options: controllers.DefaultOptions()}
	fs := newFlagSet(s, env)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.printHelp(stdout)
			return nil, flag.ErrHelp
		}
		return nil, fs.explain(err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: the manager takes flags only", fs.Arg(0))
	}
	if err := s.check(fs); err != nil {
		return nil, err
	}
	return s, nil
}

// check validates what the flags alone cannot, naming what is allowed.
func (s *settings) check(fs *flagSet) error {
	var errs []error
	if s.dockerHost == "" {
		errs = append(errs, errors.New("--docker-host must not be empty (e.g. "+defaultDockerHost+")"))
	} else if !strings.Contains(s.dockerHost, "://") {
		errs = append(errs, fmt.Errorf("--docker-host %q: want a URL such as unix:///var/run/docker.sock or tcp://10.0.0.5:2376", s.dockerHost))
	}
	positive := map[string]time.Duration{
		"docker-startup-timeout": s.dockerStartupTimeout, "pull-timeout": s.pullTimeout, "stop-timeout": s.options.StopTimeout,
		"grace-period": s.options.GracePeriod, "resync-period": s.options.ResyncPeriod, "sweep-interval": s.options.SweepInterval,
		"leader-election-lease-duration": s.leaseDuration, "leader-election-renew-deadline": s.renewDeadline,
		"leader-election-retry-period": s.retryPeriod,
	}
	for _, name := range slices.Sorted(maps.Keys(positive)) {
		if positive[name] <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be a positive duration such as 30s or 5m, not %s", name, positive[name]))
		}
	}
	if s.maxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles must be at least 1, not %d", s.maxConcurrentReconciles))
	}
	if s.options.PidsLimit < 1 {
		errs = append(errs, fmt.Errorf("--pids-limit must be at least 1, not %d", s.options.PidsLimit))
	}
	if s.renewDeadline >= s.leaseDuration || s.retryPeriod >= s.renewDeadline {
		errs = append(errs, fmt.Errorf("leader election needs retry period (%s) < renew deadline (%s) < lease duration (%s)",
			s.retryPeriod, s.renewDeadline, s.leaseDuration))
	}
	if s.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty"))
	}

	s.options.Images = map[string]engine.Images{}
	for _, e := range engine.All() {
		imgs := *s.images[e.Name()]
		for name, ref := range map[string]string{imageFlag(e): imgs.Default, kitchenSinkFlag(e): imgs.KitchenSink} {
			if fs.Lookup(name) == nil {
				continue
			}
			if ref == "" {
				errs = append(errs, fmt.Errorf("--%s must not be empty", name))
			} else if _, err := reference.ParseNormalizedNamed(ref); err != nil {
				errs = append(errs, fmt.Errorf("--%s %q is not an image reference (e.g. postgres:16-alpine or registry.example:5000/team/postgres:16): %v", name, ref, err))
			}
		}
		s.options.Images[e.Name()] = imgs
	}
	o := s.options
	if msgs := validation.IsValidLabelValue(o.Instance); o.Instance == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--instance %q must be a label value: 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", o.Instance))
	}
	if !strings.Contains(o.OwnerTemplate, "{agentID}") {
		errs = append(errs, fmt.Errorf("--owner-template %q must contain {agentID}, e.g. roboco-agent-{agentID}", o.OwnerTemplate))
	}
	if o.DefaultMemory.Cmp(o.MaxMemory) > 0 {
		errs = append(errs, fmt.Errorf("--default-memory %s exceeds --max-memory %s", o.DefaultMemory.String(), o.MaxMemory.String()))
	}
	if o.DefaultMemory.Value() < 6<<20 {
		errs = append(errs, fmt.Errorf("--default-memory %s is below Docker's minimum of 6Mi", o.DefaultMemory.String()))
	}
	if o.DefaultCPU.Cmp(o.MaxCPU) > 0 {
		errs = append(errs, fmt.Errorf("--default-cpu %s exceeds --max-cpu %s", o.DefaultCPU.String(), o.MaxCPU.String()))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Note: the controller's own rules are the backstop, so that a rule added there
	// cannot be bypassed by the flags.
	return s.options.Validate()
}

// quantityValue is a resource.Quantity flag.
type quantityValue resource.Quantity

func (q *quantityValue) String() string {
	if q == nil {
		return ""
	}
	return (*resource.Quantity)(q).String()
}

func (q *quantityValue) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil {
		return errors.New("want a quantity such as 512Mi, 2Gi, 1 or 500m")
	}
	if v.Sign() <= 0 {
		return errors.New("want a positive quantity such as 512Mi, 2Gi, 1 or 500m")
	}
	*q = quantityValue(v)
	return nil
}

// probeDeadlinesValue is an engine=duration list.
type probeDeadlinesValue struct{ m *map[string]time.Duration }

func (p *probeDeadlinesValue) String() string {
	if p == nil || p.m == nil || len(*p.m) == 0 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(*p.m)) {
		parts = append(parts, name+"="+(*p.m)[name].String())
	}
	return strings.Join(parts, ",")
}

func (p *probeDeadlinesValue) Set(s string) error {
	m := map[string]time.Duration{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q: want engine=duration, e.g. postgres=120s", pair)
		}
		if _, known := engine.Lookup(name); !known {
			return fmt.Errorf("unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", "))
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%s: want a positive duration such as 90s or 2m", name, value)
		}
		m[name] = d
	}
	*p.m = m
	return nil
}
