// Package index holds the manager's field indexes (the DockerHost an object is
// bound to, a Sandbox's owner container and service container names) and the
// lookups that use them. They are registered once per manager, before its cache
// starts.
package index
