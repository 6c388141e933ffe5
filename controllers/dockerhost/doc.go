// Package dockerhost is the DockerHost controller: it dials each registered
// Docker host, proves its identity, reports its health and allocation in
// status, and holds its deletion while Sandboxes or pools are bound to it. It
// reaches the controllers that drive each host only through Fleet, which the
// face implements.
package dockerhost
