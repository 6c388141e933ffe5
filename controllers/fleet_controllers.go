package controllers

import (
	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// boundToHost admits the objects bound to the DockerHost name (spec.dockerHost).
func boundToHost(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool { return dockerHostOf(obj) == name })
}

// dockerHostOf is the DockerHost a Sandbox or SandboxPool is bound to.
func dockerHostOf(obj client.Object) string {
	switch o := obj.(type) {
	case interface{ GetDockerHost() string }:
		return o.GetDockerHost()
	default:
		return ""
	}
}

// hostControllerOptions are a host's controller's options. Every host's
// controllers share their names (sandbox, sandboxpool, sandbox-sweep), so that
// metrics and dashboards add up across the fleet; logs carry the host.
func hostControllerOptions(workers int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: ptr.To(true)}
}

// hostLogger names the controller and the DockerHost in every log line of a pass.
func hostLogger(mgr ctrl.Manager, controllerName, host string) func(*reconcile.Request) logr.Logger {
	base := mgr.GetLogger().WithValues("controller", controllerName, "dockerHost", host)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("namespace", req.Namespace, "name", req.Name)
	}
}
