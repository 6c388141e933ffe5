// Package lanes admits tenant-length steps (seed scripts, anything whose
// length a tenant controls) on one Docker host: at most N at once on the host,
// at most M of one namespace, with namespaces taking turns, so that one
// namespace queueing many steps never holds back another's one.
//
// A Gate is asked, never waited on: a reconcile pass calls Acquire on every
// pass (it never blocks), starts its step once granted, and calls Release when
// the step ended, was cancelled or its object is gone. The gate wakes a waiter
// through a hook when a lane is granted to it. The gate is the manager's
// memory only: after a restart, the steps found running in containers are
// counted again with Hold, past the caps if need be, since they run whatever
// the gate says.
//
// Namespaces take turns: the next lane goes to the namespace served longest
// ago (one never served first) among those under their own cap, and within a
// namespace to its oldest waiter. A step may ask for k lanes (the seeds of
// one multi-service request, admitted together): it gets all or none, and
// keeps its turn until k are free.
//
// Data operations and rotations do not go through a gate: they are the
// tenant's own short requests and never queue behind a seed.
//
// It knows neither Docker nor the Kubernetes API.
package lanes

import "time"

// The manager's flags for the caps, and their defaults.
const (
	// PerHostFlag is the flag naming N, the tenant-length steps that run at
	// once on one Docker host (--seed-lanes).
	PerHostFlag = "seed-lanes"
	// DefaultPerHost is N when the flag is not given: a few seeds at a time
	// leave the host's CPU and disk to the claims, resets and data requests
	// that do not queue.
	DefaultPerHost = 4
	// PerNamespaceFlag is the flag naming M, the steps of one namespace that
	// run at once on one host (--seed-lanes-per-namespace).
	PerNamespaceFlag = "seed-lanes-per-namespace"
	// DefaultPerNamespace is M when the flag is not given: below N, so that
	// one namespace's queue always leaves a lane to the others.
	DefaultPerNamespace = 2
)

// DefaultForgetAfter is how long a waiter that stopped asking keeps its place
// (WithForgetAfter). A waiter's pass asks on every pass and requeues itself
// well within it; one that stops (its object deleted without a Release) must
// not hold the queue forever.
const DefaultForgetAfter = 2 * time.Minute
