// Package controllertest is the harness the controller suites share: each
// reconciler package's suite (controllers/sandbox, controllers/sandboxpool,
// controllers/sweep) and the face's (controllers/) start their own control plane
// through it, run managers on the engine simulator, and read what they made with
// the same object, lifetime, sweep and metrics helpers.
//
// Only _test.go files import it: it calls Ginkgo and Gomega, which fail the
// running spec, and holds one control plane per test binary in package state.
// Specs share helpers through it, never through each other.
package controllertest
