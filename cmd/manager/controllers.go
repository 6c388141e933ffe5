package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/uuid"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// setupControllers registers every controller with the manager, through the one
// wiring the test suites use too (its flags go in flags.go).
func setupControllers(mgr ctrl.Manager, driver dd.Driver, s *settings) error {
	leases, err := hostLeases(s)
	if err != nil {
		return err
	}
	return controllers.Setup{Options: s.options, MaxConcurrentReconciles: s.maxConcurrentReconciles, Sweep: s.sweep,
		DockerHostName: s.dockerHostName, DockerEndpoint: s.dockerHost, Leases: leases}.AddToManager(mgr, driver)
}

// podNamespaceFile is where a Pod reads its own namespace.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// hostLeases: with leader election, the replicas share the Docker hosts through
// one Lease per DockerHost, in the leader election's namespace and with its
// timings; without it, the one manager drives every host.
func hostLeases(s *settings) (*controllers.HostLeases, error) {
	if !s.leaderElect {
		return nil, nil
	}
	ns := s.leaderElectionNamespace
	if ns == "" {
		b, err := os.ReadFile(podNamespaceFile)
		if err != nil {
			return nil, fmt.Errorf("the namespace of the host Leases: %w", err)
		}
		ns = strings.TrimSpace(string(b))
	}
	name, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	return &controllers.HostLeases{Namespace: ns, Identity: name + "_" + uuid.NewString(),
		Duration: s.leaseDuration, RetryPeriod: s.retryPeriod}, nil
}
