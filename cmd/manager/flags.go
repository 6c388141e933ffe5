package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	cliflag "k8s.io/component-base/cli/flag"
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
	dockerHostName       string
	dockerStartupTimeout time.Duration
	pullTimeout          time.Duration

	// images holds the --<engine>-image and --<engine>-kitchen-sink-image values;
	// versions the --engine-version values.
	images   map[string]*engine.Images
	versions []string

	options                 controllers.Options
	maxConcurrentReconciles int
	placementWorkers        int
	sweep                   bool

	metricsAddr, probeAddr  string
	metricsSecure           bool
	metricsCertDir          string
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

	zap zap.Options
}

// Group titles of --help, in order.
const (
	groupDocker    = "Docker host"
	groupImages    = "Images"
	groupDefaults  = "Sandbox defaults"
	groupResources = "Resources per service container"
	groupManager   = "Manager"
	groupLogging   = "Logging (controller-runtime's zap options)"
)

// flags is the manager's command line: the groups --help shows, and the one set
// that parses them all. Flags only parse; settings.validate judges the values.
type flags struct {
	*pflag.FlagSet
	groups cliflag.NamedFlagSets
	// intros are printed under a group's title, as they are (indented, wrapped).
	intros map[string]string
	// apply copies parsed values that cannot be bound in place into the settings.
	apply []func()
}

// group is the titled flag set of --help, created on first use; its flags keep
// the order they are added in.
func (f *flags) group(title string) *pflag.FlagSet {
	fs := f.groups.FlagSet(title)
	fs.SortFlags = false
	return fs
}

// newFlags binds every flag to s, which holds the defaults on entry.
func newFlags(s *settings, env func(string) string) *flags {
	f := &flags{intros: map[string]string{}}
	f.addDockerFlags(s, env)
	f.addImageFlags(s)
	f.addDefaultsFlags(s)
	f.addResourceFlags(s)
	f.addManagerFlags(s)
	f.addLoggingFlags(s)

	f.FlagSet = pflag.NewFlagSet("manager", pflag.ContinueOnError)
	for _, title := range f.groups.Order {
		f.AddFlagSet(f.groups.FlagSets[title])
	}
	f.SetOutput(io.Discard)
	f.Usage = func() {}
	return f
}

// In usage texts, a `word` in backquotes is the flag's argument name in --help
// (pflag's convention); flags without one show their type.

func (f *flags) addDockerFlags(s *settings, env func(string) string) {
	fs := f.group(groupDocker)
	dockerHost := env("DOCKER_HOST")
	if dockerHost == "" {
		dockerHost = defaultDockerHost
	}
	fs.StringVar(&s.dockerHost, "docker-host", dockerHost,
		"The Docker daemon that runs the sandbox containers, as a `url`: unix:///path/to/docker.sock or tcp://host:port. "+
			"The default is $DOCKER_HOST when set, else "+defaultDockerHost+". TLS for tcp:// comes from DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.")
	fs.StringVar(&s.dockerHostName, "docker-host-name", controllers.DefaultDockerHostName,
		"The `name` of the DockerHost that --docker-host is: the manager creates it when missing (leaving an existing one's labels, "+
			"capacity and cordon alone) and drives it with its own connection. Empty: the manager has no Docker host of its own and "+
			"drives only the DockerHosts registered with kubectl apply (a fleet).")
	fs.StringVar(&s.options.Instance, "instance", s.options.Instance,
		"The `name` of this control plane on the Docker host, written on every container it creates (label sandbox.roboco.io/instance): "+
			"a container of another instance is never judged stale or swept as an orphan by this one. "+
			"Default: derived from the cluster's identity, cluster-<UID of namespace kube-system>, so that control planes of different clusters "+
			"never share one; set it to run several control planes of one cluster on one Docker host.")
	fs.StringSliceVar(&s.options.LegacyInstances, "legacy-instances", s.options.LegacyInstances,
		"Earlier `names` of this control plane on the Docker host, separated by commas: their containers are judged stale and swept "+
			"as this instance's own. After upgrading from a release whose --instance defaulted to \"default\", list default here, "+
			"on the one control plane that ran with it on this host. (Containers of live Sandboxes are adopted by their UID without it.)")
	fs.DurationVar(&s.dockerStartupTimeout, "docker-startup-timeout", 30*time.Second,
		"How long start-up waits for Docker to answer before giving up with an error.")
	fs.DurationVar(&s.pullTimeout, "pull-timeout", dd.DefaultPullTimeout,
		"The longest one image pull may take; a pull that takes longer fails and is retried with backoff.")
	fs.DurationVar(&s.options.StopTimeout, "stop-timeout", s.options.StopTimeout,
		"On teardown, how long a service container gets between SIGTERM and SIGKILL.")
	addDataFlags(fs, s)
}

// addImageFlags adds a pair of image flags per engine of the registry (one when
// the engine has no features, and so no kitchen-sink image).
func (f *flags) addImageFlags(s *settings) {
	fs := f.group(groupImages)
	f.intros[groupImages] = "  Images are the operator's choice, never a Sandbox author's. A service with\n" +
		"  any feature runs its engine's kitchen-sink image.\n"
	s.images = map[string]*engine.Images{}
	for _, e := range engine.All() {
		def, imgs := e.Images(), &engine.Images{}
		s.images[e.Name()] = imgs
		fs.StringVar(&imgs.Default, controllers.ImageFlag(e), def.Default,
			fmt.Sprintf("The image `ref` of %s services that ask for no features.", e.Name()))
		if hasKitchenSink(e) {
			fs.StringVar(&imgs.KitchenSink, controllers.KitchenSinkFlag(e), def.KitchenSink,
				fmt.Sprintf("The image `ref` of %s services that ask for any feature (%s); it must provide all of them.",
					e.Name(), strings.Join(e.Features(), ", ")))
		}
	}
	f.apply = append(f.apply, func() {
		s.options.Images = map[string]engine.Images{}
		for name, imgs := range s.images {
			s.options.Images[name] = *imgs
		}
	})
	addVersionFlags(fs, s)
}

// hasKitchenSink says whether the engine has features, and so a kitchen-sink image.
func hasKitchenSink(e engine.Engine) bool { return len(e.Features()) > 0 }

func (f *flags) addDefaultsFlags(s *settings) {
	fs := f.group(groupDefaults)
	o := &s.options
	fs.StringVar(&o.DefaultNetwork, "default-network", o.DefaultNetwork,
		"The `name` of the Docker network services join when spec.network is empty; they get their container name as DNS alias there. "+
			"Empty means Docker's default bridge, where agents reach services by IP address.")
	fs.StringSliceVar(&o.AllowedNetworks, "allowed-networks", o.AllowedNetworks,
		"The Docker `networks` a Sandbox's spec.network may name besides --default-network, separated by commas. "+
			"Default: none, so every Sandbox joins the default network. A Sandbox asking for any other is stalled (InvalidSpec) with the allowed names; "+
			"host, none and bridge are never allowed. A service's author holds its superuser, so list only networks they may reach.")
	fs.StringVar(&o.OwnerTemplate, "owner-template", o.OwnerTemplate,
		"The owner container of a Sandbox whose spec.owner.containerName is empty, as a `template`: {agentID} is replaced by spec.agentID.")
	fs.DurationVar(&o.GracePeriod, "grace-period", o.GracePeriod,
		"How long an owner container may be missing before its Sandbox is deleted, when spec.owner.gracePeriod is unset.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod,
		"How often a settled Sandbox is checked again (±10% jitter). Docker events make changes visible at once; this is the backstop.")
	fs.BoolVar(&s.sweep, "sweep", true,
		"Run the orphan sweep: remove this instance's sandbox containers whose Sandbox no longer exists, and upstream's "+
			"legacy containers whose owner container is gone, once older than the grace period.")
	fs.DurationVar(&o.SweepInterval, "sweep-interval", o.SweepInterval,
		"How often the orphan sweep runs (±10% jitter); Docker events and Sandbox deletions trigger it in between.")
	fs.StringVar((*string)(&o.UpdateStrategy), "update-strategy", string(o.UpdateStrategy),
		"When a running service container made with settings you have since changed (images, default limits, --pids-limit, "+
			"how containers are made) is replaced, for Sandboxes that set no spec.updateStrategy: OnDelete keeps it, with its data, "+
			"until it is removed; RollingUpdate replaces it (its data goes). Spec and credential changes always replace it.")
	fs.Var(&probeDeadlinesValue{m: &o.ProbeDeadlines}, "probe-deadline",
		"How long a service may take to answer its readiness probe after start, as engine=duration pairs separated by commas "+
			"(e.g. postgres=120s,mongo=90s), for slow hosts. Engines not listed keep their own: "+engineDeadlines()+".")
}

// addResourceFlags binds the quantities through apimachinery's QuantityValue,
// which holds its own Quantity; apply copies them into the options.
func (f *flags) addResourceFlags(s *settings) {
	fs := f.group(groupResources)
	o := &s.options
	qty := func(dst *resource.Quantity, name, usage string) {
		v := &resource.QuantityValue{Quantity: dst.DeepCopy()}
		fs.Var(v, name, usage)
		f.apply = append(f.apply, func() { *dst = v.Quantity })
	}
	qty(&o.DefaultMemory, "default-memory", "The memory limit of a service that sets no spec.services[].resources.memory (at least 6Mi).")
	qty(&o.MaxMemory, "max-memory", "The largest memory limit a service may ask for; a larger request fails the Sandbox with a message.")
	qty(&o.DefaultCPU, "default-cpu", "The CPU limit, in cores, of a service that sets no spec.services[].resources.cpu (e.g. 1 or 500m).")
	qty(&o.MaxCPU, "max-cpu", "The largest CPU limit a service may ask for.")
	fs.Int64Var(&o.PidsLimit, "pids-limit", o.PidsLimit, "The most processes one service container may run.")
	fs.IntVar(&o.PoolRefills, "pool-refills", o.PoolRefills,
		"The most warm pool members starting at once (made and not yet answering), across SandboxPools: refills leave the Docker daemon and the CPU to claims and cold Sandboxes.")
}

func (f *flags) addManagerFlags(s *settings) {
	fs := f.group(groupManager)
	// Note: controller-runtime's kubeconfig flag is a Go flag; pflag adopts it.
	kube := flag.NewFlagSet("kubeconfig", flag.ContinueOnError)
	config.RegisterFlags(kube)
	fs.AddGoFlagSet(kube)
	describe(fs, config.KubeconfigFlagName,
		"The `path` of the kubeconfig of the cluster to watch. Default: $KUBECONFIG, else the Pod's service account, else ~/.kube/config.")
	fs.IntVar(&s.maxConcurrentReconciles, "max-concurrent-reconciles", 16,
		"How many Sandboxes of one Docker host are reconciled at once. Pulls and probe waits do not hold a worker, but container creates and starts do (seconds on a loaded host): with too few, a burst's teardowns and admissions queue behind its starts.")
	fs.IntVar(&s.placementWorkers, "placement-workers", 8,
		"How many Sandboxes without a Docker host are placed at once (API reads and one patch each): a burst of creates waits on placement before any claim.")
	fs.StringVar(&s.metricsAddr, "metrics-bind-address", ":8080",
		`The `+"`address`"+` Prometheus metrics are served on (/metrics). "0" turns them off.`)
	fs.BoolVar(&s.metricsSecure, "metrics-secure", false,
		"Serve /metrics over HTTPS to authenticated, authorized clients only: a bearer token that a TokenReview accepts, "+
			"whose user a SubjectAccessReview allows get on the non-resource URL /metrics (the metrics-reader ClusterRole). "+
			"Off: plain HTTP to anyone who reaches the address, for a manager run on a workstation.")
	fs.StringVar(&s.metricsCertDir, "metrics-cert-dir", "",
		"A `directory` holding tls.crt and tls.key for --metrics-secure (e.g. a cert-manager Secret). Default: a self-signed "+
			"certificate made at start-up.")
	fs.StringVar(&s.probeAddr, "health-probe-bind-address", ":8081",
		`The `+"`address`"+` /healthz (the process runs and its workers take work) and /readyz (Docker answers) are served on. "0" turns them off.`)
	fs.BoolVar(&s.leaderElect, "leader-elect", false,
		"Elect a leader through a coordination.k8s.io Lease so that only one of several replicas acts. "+
			"Replicas that are not the leader wait, ready to take over.")
	fs.StringVar(&s.leaderElectionID, "leader-election-id", "sandbox-controller.sandbox.roboco.io",
		"The `name` of the Lease. Managers that share it share one leader.")
	fs.StringVar(&s.leaderElectionNamespace, "leader-election-namespace", "",
		"The `namespace` of the Lease. Default: the manager's own namespace when it runs in a Pod; required outside a cluster.")
	fs.DurationVar(&s.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a Lease holds after its last renewal: the longest a new leader waits when the old one died.")
	fs.DurationVar(&s.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it gives up leadership (and exits). Less than the lease duration.")
	fs.DurationVar(&s.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How often candidates try to acquire, and the leader to renew, the Lease.")
}

// addLoggingFlags adds controller-runtime's zap flags (Go flags), described for
// this manager.
func (f *flags) addLoggingFlags(s *settings) {
	fs := f.group(groupLogging)
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	s.zap.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
	describe(fs, "zap-devel",
		"Development logging: console encoder, debug level, stack traces from warnings. Without it: JSON, info level, stack traces from errors. (default false)")
	describe(fs, "zap-encoder", "The log format: `json|console`. Default: json, or console with --zap-devel.")
	describe(fs, "zap-log-level",
		"The least severe `level` logged: debug, info, error, or an integer n > 0 for debug verbosity n. Default: info, or debug with --zap-devel.")
	describe(fs, "zap-stacktrace-level",
		"The `level` from which stack traces are logged: info, error or panic. Default: error, or warn with --zap-devel.")
	describe(fs, "zap-time-encoding",
		"How log timestamps are written, a `format`: epoch, millis, nano, iso8601, rfc3339 or rfc3339nano. (default rfc3339)")
}

// describe replaces the help text of a flag bound by a library.
func describe(fs *pflag.FlagSet, name, usage string) {
	if f := fs.Lookup(name); f != nil {
		f.Usage = usage
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
