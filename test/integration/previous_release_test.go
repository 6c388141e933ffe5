package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	shost "github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// previousRelease makes service containers exactly as the release before the
// hardening did (commit 8d6a184): the password in Env (postgres, mongo) or in
// Cmd (redis --requirepass), every default capability, unbounded logs, swap,
// and its config-hash label.
type previousRelease struct {
	cp *controlPlane
	sb *sandboxv1.Sandbox
}

// its engine settings, as 8d6a184's internal/engine had them.
func (previousRelease) envAndCmd(e engine.Engine, password string) (map[string]string, []string) {
	switch e.Name() {
	case "postgres":
		return map[string]string{"POSTGRES_USER": "sandbox", "POSTGRES_PASSWORD": password, "POSTGRES_DB": "sandbox"}, nil
	case "redis":
		return nil, []string{"redis-server", "--requirepass", password}
	}
	return map[string]string{"MONGO_INITDB_ROOT_USERNAME": "sandbox", "MONGO_INITDB_ROOT_PASSWORD": password}, nil
}

// configHash is 8d6a184's controllers.configHash over what it hashed.
func (previousRelease) configHash(image, net string, cmd []string, env, tmpfs map[string]string, memory, cpus, pids int64) string {
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	write(image, net)
	write(cmd...)
	for _, m := range []map[string]string{env, tmpfs} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			write(k, m[k])
		}
	}
	write(fmt.Sprint(memory, cpus, pids))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// create makes and starts e's container for the Sandbox, as 8d6a184's
// resolveService and driver did, with the manager's defaults; it returns its ID.
func (p previousRelease) create(t *testing.T, h *host, e engine.Engine, password string) string {
	t.Helper()
	o, sb := p.cp.options, p.sb
	name := engine.ContainerName(e, sb.Spec.AgentID)
	image := o.Images[e.Name()].Default
	env, cmd := p.envAndCmd(e, password)
	memory, cpus, pids := o.DefaultMemory.Value(), o.DefaultCPU.MilliValue()*1_000_000, o.PidsLimit
	labels := map[string]string{
		shost.LabelSandbox: shost.LabelSandboxTrue, shost.LabelOwner: "roboco-agent-" + sb.Spec.AgentID,
		shost.LabelNamespace: sb.Namespace, shost.LabelName: sb.Name, shost.LabelUID: string(sb.UID),
		shost.LabelEngine: e.Name(), shost.LabelInstance: o.Instance, shost.LabelRestarts: "0",
		shost.LabelConfigHash: p.configHash(image, p.cp.network, cmd, env, e.Tmpfs(), memory, cpus, pids),
		testLabel:             runID,
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	ctx := context.Background()
	res, err := h.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   name,
		Config: &container.Config{Image: image, Labels: labels, Env: envList, Cmd: cmd},
		HostConfig: &container.HostConfig{
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			SecurityOpt:   []string{"no-new-privileges"},
			Tmpfs:         e.Tmpfs(),
			Resources:     container.Resources{Memory: memory, NanoCPUs: cpus, PidsLimit: &pids},
			NetworkMode:   container.NetworkMode(p.cp.network),
		},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			p.cp.network: {Aliases: []string{name}},
		}},
	})
	if err != nil {
		t.Fatalf("creating %s as the previous release did: %v", name, err)
	}
	if _, err := h.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	return res.ID
}

// secret is the credentials Secret as the previous release made it.
func (p previousRelease) secret(passwords map[string]string) map[string][]byte {
	data := map[string][]byte{}
	for name, pw := range passwords {
		e, _ := engine.Lookup(name)
		for k, v := range e.Publish(engine.HostName(e, p.sb.Spec.AgentID), pw) {
			data[k] = []byte(v)
		}
	}
	return data
}
