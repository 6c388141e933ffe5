// Command manager runs the sandbox controller: the Sandbox reconciler (and the
// controllers registered next to it in controllers.go) against one Docker host.
// Run it with --help for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	s, err := parseSettings(args, os.Getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	// Note: a failed write to stderr leaves nothing to report it to.
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(stderr, format, args...) }
	if err != nil {
		if lines := strings.Split(err.Error(), "\n"); len(lines) > 1 {
			say("manager: %d problems with the flags:\n  - %s\n", len(lines), strings.Join(lines, "\n  - "))
		} else {
			say("manager: %v\n", err)
		}
		say("Run manager --help for every flag, its default and what it allows.\n")
		return 2
	}
	logger := zap.New(zap.UseFlagOptions(&s.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	if err := start(ctrl.SetupSignalHandler(), s); err != nil {
		// Note: start-up errors are multi-line advice for a person; printed as
		// they are, they stay readable in `kubectl logs` too.
		var se startupError
		if errors.As(err, &se) {
			say("manager: cannot start: %v\n", se.err)
		} else {
			ctrl.Log.WithName("setup").Error(err, "Manager stopped with an error")
		}
		return 1
	}
	return 0
}

// startupError is a failure before the manager runs.
type startupError struct{ err error }

func (e startupError) Error() string { return e.err.Error() }

// start connects to Docker and the cluster, builds the manager and runs it until
// ctx ends. Stopping only stops: containers are left to the next manager.
func start(ctx context.Context, s *settings) error {
	log := ctrl.Log.WithName("setup")
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return startupError{fmt.Errorf("no cluster to talk to: %w\n"+ //nolint:staticcheck // ST1005: advice for a person, printed as it is
			"Outside a Pod, give a kubeconfig with --kubeconfig or $KUBECONFIG (or ~/.kube/config).", err)}
	}
	if s.leaderElect && s.leaderElectionNamespace == "" {
		if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err != nil {
			return startupError{errors.New("--leader-elect outside a Pod needs --leader-election-namespace (the namespace of the Lease)")}
		}
	}

	driver, closeDriver, err := ownDocker(ctx, s)
	if err != nil {
		return startupError{err}
	}
	// Note: Close cancels in-flight pulls and nothing else: containers keep running.
	defer closeDriver()

	if err := checkAPIServer(restConfig); err != nil {
		return startupError{err}
	}
	mgr, err := ctrl.NewManager(restConfig, managerOptions(s))
	if err != nil {
		return startupError{fmt.Errorf("creating the manager: %w", err)}
	}
	// Note: liveness is the manager's own (its HTTP server answers, and the
	// controllers add a check that their workers take work, kit.Workers);
	// Docker's health is readiness only, so an outage takes the manager out of
	// rotation instead of restarting it in a loop.
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return startupError{err}
	}
	// Note: a manager of registered DockerHosts only has no Docker of its own to
	// be ready for; each host's health is its DockerHost's Ready condition.
	readyz := healthz.Ping
	if driver != nil {
		readyz = dockerReadyz(driver)
	}
	if err := mgr.AddReadyzCheck("docker", readyz); err != nil {
		return startupError{err}
	}
	if err := setupControllers(mgr, driver, s); err != nil {
		return startupError{err}
	}

	log.Info("Starting the manager", "defaultNetwork", s.options.DefaultNetwork, "leaderElection", s.leaderElect,
		"maxConcurrentReconciles", s.maxConcurrentReconciles)
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	log.Info("Manager stopped; sandbox containers keep running")
	return nil
}

// managerOptions are controller-runtime's options from the flags.
func managerOptions(s *settings) ctrl.Options {
	return ctrl.Options{
		Scheme:                        controllers.NewScheme(),
		Metrics:                       metricsOptions(s),
		HealthProbeBindAddress:        s.probeAddr,
		LeaderElection:                s.leaderElect,
		LeaderElectionID:              s.leaderElectionID,
		LeaderElectionNamespace:       s.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true, // the process exits right after the manager stops
		LeaseDuration:                 &s.leaseDuration,
		RenewDeadline:                 &s.renewDeadline,
		RetryPeriod:                   &s.retryPeriod,
		Cache:                         controllers.CacheOptions(),
	}
}

// metricsOptions serve /metrics as --metrics-secure says: plain HTTP, or HTTPS
// behind controller-runtime's filter, which asks the API server to authenticate
// the caller's token and to authorize get on /metrics (a 401 or a 403 otherwise).
func metricsOptions(s *settings) metricsserver.Options {
	o := metricsserver.Options{BindAddress: s.metricsAddr}
	if s.metricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		o.CertDir, o.CertName, o.KeyName = s.metricsCertDir, "tls.crt", "tls.key"
	}
	return o
}

// checkAPIServer fails start-up clearly when the API server does not answer or
// does not serve Sandboxes, instead of a cache sync timeout minutes later.
func checkAPIServer(restConfig *rest.Config) error {
	cfg := rest.CopyConfig(restConfig)
	cfg.Timeout = 15 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", restConfig.Host, err)
	}
	gv := sandboxv1.GroupVersion.String()
	resources, err := dc.ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("the API server at %s does not serve %s: install the CRD first (make install, or kubectl apply -k config/crd)", restConfig.Host, gv)
	case err != nil:
		return fmt.Errorf("the API server at %s does not answer: %w\nCheck the kubeconfig (--kubeconfig, $KUBECONFIG) and that the server runs.", restConfig.Host, err) //nolint:staticcheck // ST1005: advice for a person, printed as it is
	}
	for _, r := range resources.APIResources {
		if r.Name == "sandboxes" {
			return nil
		}
	}
	return fmt.Errorf("the API server at %s serves %s but not sandboxes: install the current CRD (make install)", restConfig.Host, gv)
}
