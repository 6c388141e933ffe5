// Package lease shares the Docker hosts among manager replicas, one Lease per
// DockerHost (Table), fences a host's driver so that a replica that lost its
// Lease changes nothing there (Fenced), and is the Scope a host's controllers
// run in: which host, whether this replica acts on it now, and where they run.
package lease
