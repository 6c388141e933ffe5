// Package placement binds unbound Sandboxes and SandboxPools to a DockerHost
// (spec.dockerHost), like a scheduler's bind: beside the owner container, by
// selector, around cordons and within capacity, reserving before it binds. It
// reaches the hosts' drivers only through Drivers.
package placement
