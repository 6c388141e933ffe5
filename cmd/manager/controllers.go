package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// setupControllers registers every controller with the manager, through the one
// wiring the test suites use too (its flags go in flags.go).
func setupControllers(mgr ctrl.Manager, driver dd.Driver, s *settings) error {
	return controllers.Setup{Options: s.options, MaxConcurrentReconciles: s.maxConcurrentReconciles, Sweep: s.sweep,
		DockerHostName: s.dockerHostName, DockerEndpoint: s.dockerHost}.AddToManager(mgr, driver)
}
