// Package poolkey keeps each SandboxPool's member key in a Secret the pool
// controls, and derives each member's password from it: no password is stored
// on a member, nor lost on a restart.
package poolkey
