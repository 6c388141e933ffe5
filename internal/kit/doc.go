// Package kit is what every reconciler's pass shares: pacing and backoff, the
// bounded event recorder, the one status patch, the one condition setter
// (stamped with observedGeneration), the finalizer helper, the liveness check
// of the workers (their queues watched), and how a host's identity is shown in status.
package kit
