package controllertest

import (
	"time"

	"github.com/onsi/gomega"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// SweepOptions are the test options with a short grace period and a sweep every second.
func SweepOptions(grace time.Duration) Options {
	o := LifetimeOptions(grace)
	o.SweepInterval = time.Second
	return o
}

// SeedOrphan puts a container of ours on the host whose Sandbox (ns/name, uid) does
// not exist.
func SeedOrphan(host *EngineSim, container, ns, name, uid string) dd.Container {
	return SeedOrphanOf(host, SuiteInstance(), container, ns, name, uid)
}

// SeedOrphanOf is seedOrphan made by a manager of the given instance.
func SeedOrphanOf(host *EngineSim, instance, container, ns, name, uid string) dd.Container {
	c, err := host.SeedContainer(dd.ContainerSpec{Name: container, Image: "redis:8-alpine", Labels: map[string]string{
		shost.LabelSandbox: "1", shost.LabelOwner: "roboco-agent-" + name,
		shost.LabelNamespace: ns, shost.LabelName: name, shost.LabelUID: uid, shost.LabelEngine: "redis",
		shost.LabelInstance: instance}}, true)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	return c
}

// Exists says whether a container of that name is on the host.
func Exists(host *EngineSim, name string) func() bool {
	return func() bool {
		_, ok := host.Peek(name)
		return ok
	}
}

// WhenGone waits for a container to disappear and returns when it was first seen gone.
func WhenGone(host *EngineSim, name string, within time.Duration) time.Time {
	var at time.Time
	gomega.EventuallyWithOffset(1, func() bool {
		if _, ok := host.Peek(name); !ok {
			at = time.Now()
			return true
		}
		return false
	}, within, 20*time.Millisecond).Should(gomega.BeTrue(), "%s not removed", name)
	return at
}
