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
	if leases != nil {
		// Note: the identity is what DockerHost status.manager and the host Leases name.
		ctrl.Log.WithName("setup").Info("Sharing the Docker hosts with the other replicas through Leases",
			"identity", leases.Identity, "namespace", leases.Namespace)
	}
	return controllers.Setup{Options: s.options, MaxConcurrentReconciles: s.maxConcurrentReconciles, PlacementWorkers: s.placementWorkers, Sweep: s.sweep,
		DockerHostName: s.dockerHostName, DockerEndpoint: s.dockerHost, Leases: leases, UserAgent: userAgent()}.AddToManager(mgr, driver)
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
	return &controllers.HostLeases{Namespace: ns, Identity: replicaIdentity,
		Duration: s.leaseDuration, RetryPeriod: s.retryPeriod}, nil
}

// replicaIdentity names this process among the manager's replicas: its host
// name (the Pod's) and a random part, as controller-runtime's leader election does.
var replicaIdentity = func() string {
	name, err := os.Hostname()
	if err != nil {
		name = "manager"
	}
	return name + "_" + uuid.NewString()
}()

// userAgent is what the manager calls itself to Docker daemons.
func userAgent() string { return "sandbox-controller/" + replicaIdentity }
