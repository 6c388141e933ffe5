// Package controllers is the face of the manager: Setup and AddToManager, the
// one wiring cmd/manager and every suite use; the scheme and the cache options;
// the fleet, which runs one set of controllers per DockerHost (the Sandbox and
// SandboxPool reconcilers and the orphan sweep, on that host's driver, events
// and identity) and implements what the DockerHost controller and placement
// need of it; and the few names cmd/manager and the black-box suites use.
//
// The reconcilers live in controllers/<name>, the mechanisms they share in
// internal/; dependencies point one way, from here down (docs/development.md).
package controllers
