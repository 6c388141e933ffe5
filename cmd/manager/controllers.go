package main

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// setupControllers registers every controller with the manager. It is the one
// place a controller is added (its flags go in flags.go).
func setupControllers(mgr ctrl.Manager, driver dd.Driver, s *settings) error {
	sandboxes := &controllers.SandboxReconciler{
		Client:                  mgr.GetClient(),
		Driver:                  driver,
		Options:                 s.options,
		MaxConcurrentReconciles: s.maxConcurrentReconciles,
	}
	if err := sandboxes.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Sandbox controller: %w", err)
	}
	if s.sweep {
		sweep := &controllers.SweepReconciler{Driver: driver, Options: s.options}
		if err := sweep.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the orphan sweep: %w", err)
		}
	}
	return nil
}
