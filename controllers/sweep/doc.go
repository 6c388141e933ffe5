// Package sweep is the orphan sweep of one Docker host: it removes the
// containers no Sandbox or pool owns any more (their Sandbox gone, upstream's
// whose owner is gone, members of pools gone), and only those proven so.
package sweep
