package drivertest

import (
	"maps"
	"slices"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

func reportsSpec(env Env, net string) dd.ContainerSpec {
	s := spec(env, "inspect", Script{Sleep: Forever})
	s.Labels["sandbox.roboco.io/engine"] = "postgres"
	s.Env = map[string]string{"SANDBOX_FOO": "bar", "SANDBOX_EMPTY": ""}
	s.Tmpfs = map[string]string{"/scratch": "rw,size=16m"}
	s.MemoryBytes = 64 << 20
	s.NanoCPUs = 500_000_000
	s.PidsLimit = 64
	s.Network = net
	s.Aliases = []string{"db-" + randomHex(4)}
	s.CapAdd = []string{"CHOWN", "SETUID"}
	s.Log = dd.LogLimits{MaxSize: "1m", MaxFiles: 2}
	return s
}

// checkReported: a container reports (where: on create or inspect) what its spec s asked for.
func checkReported(t *testing.T, where string, s dd.ContainerSpec, net string, got dd.Container) {
	t.Helper()
	checkReportedProcess(t, where, s, got)
	checkReportedHardening(t, where, s, got)
	ep, ok := got.Networks[net]
	if !ok || ep.IPAddress == "" || !slices.Contains(ep.Aliases, s.Aliases[0]) {
		t.Errorf("%s: networks %+v, want %s with an IP and alias %s", where, got.Networks, net, s.Aliases[0])
	}
}

// checkReportedProcess: the name, image, state, labels, environment, command and tmpfs.
func checkReportedProcess(t *testing.T, where string, s dd.ContainerSpec, got dd.Container) {
	t.Helper()
	if got.ID == "" || got.Name != s.Name || got.Image != s.Image {
		t.Errorf("%s: id %q name %q image %q, want name %q image %q", where, got.ID, got.Name, got.Image, s.Name, s.Image)
	}
	if got.State != dd.StateRunning || got.StartedAt.IsZero() || got.CreatedAt.IsZero() || !got.FinishedAt.IsZero() {
		t.Errorf("%s: state %q created %v started %v finished %v, want running", where, got.State, got.CreatedAt, got.StartedAt, got.FinishedAt)
	}
	for k, v := range s.Labels {
		if got.Labels[k] != v {
			t.Errorf("%s: label %s = %q, want %q", where, k, got.Labels[k], v)
		}
	}
	for _, kv := range []string{"SANDBOX_FOO=bar", "SANDBOX_EMPTY="} {
		if !slices.Contains(got.Env, kv) {
			t.Errorf("%s: env %v lacks %q", where, got.Env, kv)
		}
	}
	if !slices.Equal(got.Cmd, s.Cmd) {
		t.Errorf("%s: cmd %q, want %q", where, got.Cmd, s.Cmd)
	}
	if !maps.Equal(got.Tmpfs, s.Tmpfs) {
		t.Errorf("%s: tmpfs %v, want %v", where, got.Tmpfs, s.Tmpfs)
	}
}

// checkReportedHardening: the limits, privileges, capabilities and log settings.
func checkReportedHardening(t *testing.T, where string, s dd.ContainerSpec, got dd.Container) {
	t.Helper()
	if got.MemoryBytes != s.MemoryBytes || got.NanoCPUs != s.NanoCPUs || got.PidsLimit != s.PidsLimit {
		t.Errorf("%s: memory %d cpus %d pids %d, want %d %d %d", where,
			got.MemoryBytes, got.NanoCPUs, got.PidsLimit, s.MemoryBytes, s.NanoCPUs, s.PidsLimit)
	}
	if got.Privileged || !slices.Contains(got.SecurityOpt, dd.SecurityOptNoNewPrivileges) || got.RestartPolicy != "no" || len(got.PublishedPorts) > 0 {
		t.Errorf("%s: privileged %v securityOpt %v restart %q ports %v, want unprivileged, no-new-privileges, no restart, no ports",
			where, got.Privileged, got.SecurityOpt, got.RestartPolicy, got.PublishedPorts)
	}
	if got.MemorySwapBytes != s.MemoryBytes {
		t.Errorf("%s: memory+swap %d, want %d (no swap)", where, got.MemorySwapBytes, s.MemoryBytes)
	}
	if !slices.Equal(got.CapDrop, []string{dd.CapAll}) || !slices.Equal(got.CapAdd, s.CapAdd) {
		t.Errorf("%s: capabilities dropped %v added %v, want %v and %v", where, got.CapDrop, got.CapAdd, []string{dd.CapAll}, s.CapAdd)
	}
	if got.LogDriver != dd.LogDriverJSONFile || got.Log != s.Log {
		t.Errorf("%s: log %s %+v, want %s %+v", where, got.LogDriver, got.Log, dd.LogDriverJSONFile, s.Log)
	}
}

// createWritesFiles: a secret delivered as a file is there when the main
// process starts (its first act is to print it), and shows nowhere in inspect.
