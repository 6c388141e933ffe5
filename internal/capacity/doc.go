// Package capacity is what a Sandbox or a pool takes of a Docker host, what a
// host holds, and the reservations that keep racing placements within its
// capacity.
package capacity
