package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

const password = "s3cr3t=Pa55/word" // an '=' inside, as base64 has

// wantedPostgres is a postgres service as the reconciler asks for it.
func wantedPostgres() dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: "roboco-sandbox-postgres-be-dev-1", Image: "localhost:5001/sandbox-test/postgres:15",
		Env:   map[string]string{"POSTGRES_PASSWORD": password, "POSTGRES_USER": "sandbox", "POSTGRES_DB": "sandbox"},
		Cmd:   []string{"postgres", "-c", "fsync=off"},
		Tmpfs: map[string]string{"/var/lib/postgresql/data": "rw,size=256m", "/run/postgresql": ""},
		// 512Mi, one CPU, 512 processes.
		MemoryBytes: 512 << 20, NanoCPUs: 1e9, PidsLimit: 512,
		Network: "sbx", Aliases: []string{"roboco-sandbox-postgres-be-dev-1", "pg-be-dev-1"},
	}
}

// madeFrom is the container Docker reports for spec: the image's own environment
// added to the spec's, the spec's aliases plus the short ID Docker adds.
func madeFrom(spec dd.ContainerSpec) dd.Container {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/bin", "PG_MAJOR=15", "PGDATA=/var/lib/postgresql/data"}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
	}
	return dd.Container{
		Name: spec.Name, Image: spec.Image, Env: env, Cmd: slices.Clone(spec.Cmd), Tmpfs: maps.Clone(spec.Tmpfs),
		MemoryBytes: spec.MemoryBytes, NanoCPUs: spec.NanoCPUs, PidsLimit: spec.PidsLimit,
		Networks: map[string]dd.Endpoint{spec.Network: {IPAddress: "172.18.0.5", Aliases: append(slices.Clone(spec.Aliases), "3f2a9c1b")}},
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
		{"password", func(s *dd.ContainerSpec) { s.Env["POSTGRES_PASSWORD"] = "another" }},
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

func TestDifferences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*dd.ContainerSpec, *dd.Container)
		want   []string
	}{
		{"as made", func(*dd.ContainerSpec, *dd.Container) {}, nil},
		{"the image's command, where the spec has none", func(s *dd.ContainerSpec, c *dd.Container) {
			s.Cmd, c.Cmd = nil, []string{"docker-entrypoint.sh", "postgres"}
		}, nil},
		{"on the default bridge, whose aliases Docker does not keep", func(s *dd.ContainerSpec, c *dd.Container) {
			s.Network, c.Networks = "", map[string]dd.Endpoint{"bridge": {}}
		}, nil},
		{"image", func(s *dd.ContainerSpec, c *dd.Container) { c.Image = "postgres:14" },
			[]string{"image postgres:14 → localhost:5001/sandbox-test/postgres:15"}},
		{"another network", func(s *dd.ContainerSpec, c *dd.Container) { c.Networks = map[string]dd.Endpoint{"bridge": {}} },
			[]string{"network → sbx"}},
		{"host alias missing", func(s *dd.ContainerSpec, c *dd.Container) {
			c.Networks["sbx"] = dd.Endpoint{Aliases: []string{"roboco-sandbox-postgres-be-dev-1"}}
		}, []string{"alias pg-be-dev-1 added"}},
		{"command", func(s *dd.ContainerSpec, c *dd.Container) { c.Cmd = []string{"postgres"} }, []string{"command changed"}},
		{"password and user", func(s *dd.ContainerSpec, c *dd.Container) {
			s.Env["POSTGRES_PASSWORD"], s.Env["POSTGRES_USER"] = "n3w-"+password, "agent"
		}, []string{"environment POSTGRES_PASSWORD, POSTGRES_USER changed"}},
		{"a variable the container lacks", func(s *dd.ContainerSpec, c *dd.Container) { s.Env["POSTGRES_INITDB_ARGS"] = "--no-sync" },
			[]string{"environment POSTGRES_INITDB_ARGS changed"}},
		{"tmpfs", func(s *dd.ContainerSpec, c *dd.Container) { delete(c.Tmpfs, "/run/postgresql") }, []string{"tmpfs mounts changed"}},
		{"memory", func(s *dd.ContainerSpec, c *dd.Container) { s.MemoryBytes = 1 << 30 }, []string{"memory 512Mi → 1Gi"}},
		{"cpu", func(s *dd.ContainerSpec, c *dd.Container) { s.NanoCPUs = 5e8 }, []string{"cpu 1 → 500m"}},
		{"pids", func(s *dd.ContainerSpec, c *dd.Container) { c.PidsLimit = 0 }, []string{"pids limit 0 → 512"}},
		{"several at once, each said", func(s *dd.ContainerSpec, c *dd.Container) {
			c.Image, s.MemoryBytes, s.Env["POSTGRES_PASSWORD"] = "postgres:14", 256<<20, "n3w-"+password
		}, []string{"image postgres:14 → localhost:5001/sandbox-test/postgres:15", "environment POSTGRES_PASSWORD changed", "memory 512Mi → 256Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := wantedPostgres()
			c := madeFrom(want)
			tc.change(&want, &c)
			got := Differences(want, c)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences %q, want %q", got, tc.want)
			}
			// They reach events and logs: neither the old password nor the new may show.
			for _, d := range got {
				for _, secret := range []string{password, want.Env["POSTGRES_PASSWORD"]} {
					if strings.Contains(d, secret) {
						t.Errorf("%q quotes a password", d)
					}
				}
			}
		})
	}
}
