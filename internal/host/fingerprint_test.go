package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

const password = "s3cr3t=Pa55/word" // an '=' inside, as base64 has

// wantedPostgres is a postgres service as the reconciler asks for it.
func wantedPostgres() dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: "roboco-sandbox-postgres-be-dev-1", Image: "localhost:5001/sandbox-test/postgres:15",
		Env:    map[string]string{"POSTGRES_PASSWORD_FILE": "/run/secrets/postgres-password", "POSTGRES_USER": "sandbox", "POSTGRES_DB": "sandbox"},
		Files:  []dd.File{{Path: "/run/secrets/postgres-password", Mode: 0o444, Content: []byte(password)}},
		Labels: map[string]string{LabelCredentials: CredentialsHash(password), LabelFeatures: ""},
		CapAdd: []string{"CHOWN", "FOWNER", "SETGID", "SETUID"}, Log: dd.LogLimits{MaxSize: "10m", MaxFiles: 2},
		Cmd:   []string{"postgres", "-c", "fsync=off"},
		Tmpfs: map[string]string{"/var/lib/postgresql/data": "rw,size=256m", "/run/postgresql": ""},
		// 512Mi, one CPU, 512 processes.
		MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 512,
		Network: "sbx", Aliases: []string{"roboco-sandbox-postgres-be-dev-1", "pg-be-dev-1"},
	}
}

// madeFrom is the container Docker reports for spec: the image's own environment
// added to the spec's, the spec's aliases plus the short ID Docker adds, and what
// the driver makes every container with.
func madeFrom(spec dd.ContainerSpec) dd.Container {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/bin", "PG_MAJOR=15", "PGDATA=/var/lib/postgresql/data"}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	return dd.Container{
		Name: spec.Name, Image: spec.Image, Labels: maps.Clone(spec.Labels), Env: env, Cmd: slices.Clone(spec.Cmd), Tmpfs: maps.Clone(spec.Tmpfs),
		MemoryBytes: spec.MemoryBytes, NanoCPUs: spec.NanoCPUs, PidsLimit: spec.PidsLimit,
		Networks:        map[string]dd.Endpoint{spec.Network: {IPAddress: "172.18.0.5", Aliases: append(slices.Clone(spec.Aliases), "3f2a9c1b")}},
		MemorySwapBytes: spec.MemoryBytes, CapDrop: []string{dd.CapAll}, CapAdd: slices.Clone(spec.CapAdd),
		LogDriver: dd.LogDriverJSONFile, Log: spec.Log,
	}
}

// TestFingerprintIgnoresMapOrder: the same spec hashes the same in every pass, or
// every pass would take a current container for an outdated one.
func TestFingerprintIgnoresMapOrder(t *testing.T) {
	spec := wantedPostgres()
	for i := range 20 {
		spec.Env[fmt.Sprintf("EXTRA_%02d", i)] = fmt.Sprint(i)
		spec.Tmpfs[fmt.Sprintf("/tmp/%02d", i)] = ""
	}
	first := Fingerprint(spec)
	for range 50 {
		again := spec
		again.Env, again.Tmpfs = maps.Clone(spec.Env), maps.Clone(spec.Tmpfs) // fresh maps, fresh iteration orders
		if got := Fingerprint(again); got != first {
			t.Fatalf("the same spec hashed %s, then %s", first, got)
		}
	}
}

// TestFingerprintChangesWithWhatAContainerCannotChange: each change of the spec
// that a running container cannot take gets the container replaced.
func TestFingerprintChangesWithWhatAContainerCannotChange(t *testing.T) {
	base := Fingerprint(wantedPostgres())
	for _, tc := range []struct {
		name   string
		change func(*dd.ContainerSpec)
	}{
		{"image", func(s *dd.ContainerSpec) { s.Image = "localhost:5001/sandbox-test/postgres-kitchen:15" }},
		{"network", func(s *dd.ContainerSpec) { s.Network = "sbx-2" }},
		{"command", func(s *dd.ContainerSpec) { s.Cmd = []string{"postgres", "-c", "fsync=on"} }},
		{"command arguments split differently", func(s *dd.ContainerSpec) { s.Cmd = []string{"postgres", "-c fsync=off"} }},
		{"password", func(s *dd.ContainerSpec) { s.Files[0].Content = []byte("another") }},
		{"capabilities", func(s *dd.ContainerSpec) { s.CapAdd = s.CapAdd[1:] }},
		{"log limits", func(s *dd.ContainerSpec) { s.Log.MaxSize = "20m" }},
		{"a variable more", func(s *dd.ContainerSpec) { s.Env["POSTGRES_INITDB_ARGS"] = "--no-sync" }},
		{"tmpfs options", func(s *dd.ContainerSpec) { s.Tmpfs["/var/lib/postgresql/data"] = "rw,size=1g" }},
		{"memory", func(s *dd.ContainerSpec) { s.MemoryBytes = 1 << 30 }},
		{"cpu", func(s *dd.ContainerSpec) { s.NanoCPUs = 5e8 }},
		{"pids", func(s *dd.ContainerSpec) { s.PidsLimit = 256 }},
		{"the host alias", func(s *dd.ContainerSpec) { s.Aliases[1] = "pg-be-dev-2" }},
		{"no host alias", func(s *dd.ContainerSpec) { s.Aliases = s.Aliases[:1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := wantedPostgres()
			tc.change(&spec)
			if Fingerprint(spec) == base {
				t.Errorf("a changed %s hashes as before: the container would be kept", tc.name)
			}
		})
	}
}

// TestFingerprintKeepsContainersMadeBeforeHostAliases: the first alias is the
// container's name, which every container always had; a hash over it alone
// would have replaced every container on upgrade.
func TestFingerprintKeepsContainersMadeBeforeHostAliases(t *testing.T) {
	spec := wantedPostgres()
	spec.Aliases = spec.Aliases[:1]
	base := Fingerprint(spec)
	for _, aliases := range [][]string{nil, {"another-name"}} {
		spec.Aliases = aliases
		if got := Fingerprint(spec); got != base {
			t.Errorf("aliases %v hash %s, want %s as with only the name", aliases, got, base)
		}
	}
}

// wantedService is wantedPostgres as a service whose Sandbox chose its memory
// and network, not its cpu.
func wantedService() Service {
	e, _ := engine.Lookup("postgres")
	return Service{Engine: e, Network: "sbx", Password: password, Container: wantedPostgres(),
		Chosen: Chosen{Memory: true, Network: true}, Images: engine.Images{Default: "localhost:5001/sandbox-test/postgres:15", KitchenSink: "localhost:5001/sandbox-test/postgres-kitchen:15"}}
}

func TestDifferences(t *testing.T) {
	spec, op := CauseSpec, CauseOperator
	for _, tc := range []struct {
		name   string
		change func(*Service, *dd.Container)
		want   []Difference
	}{
		{"as made", func(*Service, *dd.Container) {}, nil},
		{"the image's command, where the spec has none", func(s *Service, c *dd.Container) {
			s.Container.Cmd, c.Cmd = nil, []string{"docker-entrypoint.sh", "postgres"}
		}, nil},
		{"on the default bridge, whose aliases Docker does not keep", func(s *Service, c *dd.Container) {
			s.Container.Network, c.Networks = "", map[string]dd.Endpoint{"bridge": {}}
		}, nil},
		{"the operator's image", func(s *Service, c *dd.Container) { c.Image = "postgres:14" },
			[]Difference{{op, "image postgres:14 → localhost:5001/sandbox-test/postgres:15"}}},
		{"features asked for", func(s *Service, c *dd.Container) {
			s.Features, s.Container.Image = []string{"vector"}, s.Images.KitchenSink
		}, []Difference{{spec, "image localhost:5001/sandbox-test/postgres:15 → localhost:5001/sandbox-test/postgres-kitchen:15"}}},
		{"features asked for, on a container made before the features label", func(s *Service, c *dd.Container) {
			s.Features, s.Container.Image = []string{"vector"}, s.Images.KitchenSink
			delete(c.Labels, LabelFeatures)
		}, []Difference{{spec, "image localhost:5001/sandbox-test/postgres:15 → localhost:5001/sandbox-test/postgres-kitchen:15"}}},
		{"the network the Sandbox chose", func(s *Service, c *dd.Container) { c.Networks = map[string]dd.Endpoint{"bridge": {}} },
			[]Difference{{spec, "network → sbx"}}},
		{"the operator's default network", func(s *Service, c *dd.Container) {
			s.Chosen.Network, c.Networks = false, map[string]dd.Endpoint{"bridge": {}}
		}, []Difference{{op, "network → sbx"}}},
		{"host alias missing", func(s *Service, c *dd.Container) {
			c.Networks["sbx"] = dd.Endpoint{Aliases: []string{"roboco-sandbox-postgres-be-dev-1"}}
		}, []Difference{{op, "alias pg-be-dev-1 added"}}},
		{"command", func(s *Service, c *dd.Container) { c.Cmd = []string{"postgres"} }, []Difference{{op, "command changed"}}},
		{"another password", func(s *Service, c *dd.Container) { s.Password = "n3w-" + password },
			[]Difference{{spec, "credentials changed"}}},
		{"the password in the environment, as an earlier release made it", func(s *Service, c *dd.Container) {
			delete(c.Labels, LabelCredentials)
			c.Env = []string{"POSTGRES_PASSWORD=" + password, "POSTGRES_USER=sandbox", "POSTGRES_DB=sandbox"}
		}, []Difference{{op, "environment POSTGRES_PASSWORD_FILE changed"}}},
		{"another password in the environment, as an earlier release made it", func(s *Service, c *dd.Container) {
			delete(c.Labels, LabelCredentials)
			c.Env = []string{"POSTGRES_PASSWORD=0ld-pa55", "POSTGRES_USER=sandbox", "POSTGRES_DB=sandbox", "POSTGRES_PASSWORD_FILE=/run/secrets/postgres-password"}
		}, []Difference{{spec, "credentials changed"}}},
		{"a variable the container lacks", func(s *Service, c *dd.Container) { s.Container.Env["POSTGRES_INITDB_ARGS"] = "--no-sync" },
			[]Difference{{op, "environment POSTGRES_INITDB_ARGS changed"}}},
		{"tmpfs", func(s *Service, c *dd.Container) { delete(c.Tmpfs, "/run/postgresql") }, []Difference{{op, "tmpfs mounts changed"}}},
		{"the memory the Sandbox chose", func(s *Service, c *dd.Container) { s.Container.MemoryBytes = 1 << 30 },
			[]Difference{{spec, "memory 512Mi → 1Gi"}, {op, "swap allowed"}}},
		{"the operator's default cpu", func(s *Service, c *dd.Container) { s.Container.NanoCPUs = 5e8 }, []Difference{{op, "cpu 1 → 500m"}}},
		{"pids", func(s *Service, c *dd.Container) { c.PidsLimit = 0 }, []Difference{{op, "pids limit 0 → 512"}}},
		{"hardening an earlier release lacked", func(s *Service, c *dd.Container) {
			c.MemorySwapBytes, c.CapDrop, c.CapAdd, c.Log = 2*c.MemoryBytes, nil, nil, dd.LogLimits{}
		}, []Difference{{op, "swap allowed"}, {op, "capabilities → only CHOWN, FOWNER, SETGID, SETUID"}, {op, "log limits → 2 files of 10m"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := wantedService()
			c := madeFrom(want.Container)
			tc.change(&want, &c)
			got := Differences(want, c)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences %q, want %q", got, tc.want)
			}
			// They reach events and logs: neither the old password nor the new may show.
			for _, d := range got {
				for _, secret := range []string{password, want.Password} {
					if strings.Contains(d.What, secret) {
						t.Errorf("%q quotes a password", d.What)
					}
				}
			}
		})
	}
}
