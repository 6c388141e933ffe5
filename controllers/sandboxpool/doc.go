// Package sandboxpool is the SandboxPool reconciler of one Docker host: it keeps
// a pool's unclaimed members made, probed and offered to claims, and removes the
// outdated, the old and the surplus. It is an extension of the Sandbox side and
// reaches it only through Sandboxes (service resolution and the host's proof),
// never the reverse.
package sandboxpool
