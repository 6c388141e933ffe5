package engine_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

const crdPath = "../../config/crd/bases/sandbox.roboco.io_sandboxes.yaml"

// serviceSchema returns the generated CRD's schema of spec.services[] as plain data,
// so this package stays free of Kubernetes types.
func serviceSchema(t *testing.T) (items map[string]any, maxItems int) {
	t.Helper()
	raw, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatalf("reading the generated CRD (run make manifests): %v", err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("parsing %s: %v", crdPath, err)
	}
	node := any(crd)
	var services map[string]any
	for _, key := range []string{"spec", "versions", "0", "schema", "openAPIV3Schema", "properties",
		"spec", "properties", "services", "items"} {
		if key == "items" {
			services = node.(map[string]any)
		}
		switch n := node.(type) {
		case map[string]any:
			node = n[key]
		case []any:
			node = n[0]
		}
		if node == nil {
			t.Fatalf("CRD has no %q on the path to spec.services.items", key)
		}
	}
	return node.(map[string]any), int(services["maxItems"].(float64))
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func TestCRDMatchesRegistry(t *testing.T) {
	items, maxItems := serviceSchema(t)
	props := items["properties"].(map[string]any)

	if maxItems < len(engine.Names()) {
		t.Errorf("CRD allows %d services, the registry has %d engines: raise MaxItems on spec.services", maxItems, len(engine.Names()))
	}

	t.Run("engine enum", func(t *testing.T) {
		got := strs(props["engine"].(map[string]any)["enum"])
		if !slices.Equal(sorted(got), sorted(engine.Names())) {
			t.Errorf("CRD engine enum %v, registry %v: update the Enum marker on api/v1alpha1.Engine", got, engine.Names())
		}
	})

	t.Run("feature enum", func(t *testing.T) {
		got := strs(props["features"].(map[string]any)["items"].(map[string]any)["enum"])
		var want []string
		for _, e := range engine.All() {
			want = append(want, e.Features()...)
		}
		if !slices.Equal(sorted(got), sorted(want)) {
			t.Errorf("CRD feature enum %v, registry %v", got, want)
		}
	})

	// One CEL rule per engine: "self.engine != '<name>' || ... f in [<allowlist>]".
	ruleRE := regexp.MustCompile(`^self\.engine != '([a-z]+)' \|\| .*f in \[(.*)\]\)$`)
	allowlists := map[string][]string{}
	for _, v := range items["x-kubernetes-validations"].([]any) {
		rule := strings.Join(strings.Fields(v.(map[string]any)["rule"].(string)), " ")
		m := ruleRE.FindStringSubmatch(rule)
		if m == nil {
			continue
		}
		allowed := []string{}
		for _, f := range strings.Split(m[2], ",") {
			if f = strings.Trim(strings.TrimSpace(f), "'"); f != "" {
				allowed = append(allowed, f)
			}
		}
		allowlists[m[1]] = allowed
	}
	for _, e := range engine.All() {
		t.Run("allowlist "+e.Name(), func(t *testing.T) {
			got, ok := allowlists[e.Name()]
			if !ok {
				t.Fatalf("CRD has no feature rule for engine %s", e.Name())
			}
			if !slices.Equal(sorted(got), sorted(e.Features())) {
				t.Errorf("CRD allows %v for %s, registry %v", got, e.Name(), e.Features())
			}
		})
	}
	for name := range allowlists {
		if _, ok := engine.Lookup(name); !ok {
			t.Errorf("CRD has a feature rule for %s, which the registry lacks", name)
		}
	}
}

func TestRegistryIsConsistent(t *testing.T) {
	slugs, images, keys := map[string]string{}, map[string]string{}, map[string]string{}
	claim := func(seen map[string]string, what, value, owner string) {
		t.Helper()
		if value == "" {
			t.Errorf("%s: empty %s", owner, what)
			return
		}
		if prev, dup := seen[value]; dup {
			t.Errorf("%s %q used by both %s and %s", what, value, prev, owner)
		}
		seen[value] = owner
	}
	for _, e := range engine.All() {
		claim(slugs, "slug", e.Slug(), e.Name())
		claim(images, "image", e.Images().Default, e.Name())
		if ks := e.Images().KitchenSink; ks != "" {
			claim(images, "kitchen-sink image", ks, e.Name())
		}
		if len(e.Features()) > 0 && e.Images().KitchenSink == "" {
			t.Errorf("%s has features but no kitchen-sink image", e.Name())
		}
		if e.Port() <= 0 || e.ProbeDeadline() <= 0 {
			t.Errorf("%s: port %d, probe deadline %s", e.Name(), e.Port(), e.ProbeDeadline())
		}
		published := e.Publish("host-x", "pw-x")
		for k, v := range published {
			claim(keys, "published variable", k, e.Name())
			if !strings.HasPrefix(k, "ROBOCO_TEST_") || v == "" {
				t.Errorf("%s publishes %s=%q", e.Name(), k, v)
			}
		}
		if published[e.PasswordKey()] != "pw-x" {
			t.Errorf("%s: PasswordKey %s does not hold the password", e.Name(), e.PasswordKey())
		}
	}
	if _, ok := engine.Lookup("mysql"); ok {
		t.Error("Lookup found an unregistered engine")
	}
}

func TestUpstreamContract(t *testing.T) {
	tests := []struct {
		engine, slug, image string
		port                int
		published           []string
	}{
		{"postgres", "pg", "postgres:16-alpine", 5432, []string{"ROBOCO_TEST_DB_HOST", "ROBOCO_TEST_DB_PORT",
			"ROBOCO_TEST_DB_USER", "ROBOCO_TEST_DB_PASSWORD", "ROBOCO_TEST_DB_ADMIN_DB", "ROBOCO_TEST_DB_URL"}},
		{"redis", "redis", "redis:8-alpine", 6379, []string{"ROBOCO_TEST_REDIS_HOST", "ROBOCO_TEST_REDIS_PORT",
			"ROBOCO_TEST_REDIS_PASSWORD", "ROBOCO_TEST_REDIS_URL"}},
		{"mongo", "mongo", "mongo:8", 27017, []string{"ROBOCO_TEST_MONGO_HOST", "ROBOCO_TEST_MONGO_PORT",
			"ROBOCO_TEST_MONGO_USER", "ROBOCO_TEST_MONGO_PASSWORD", "ROBOCO_TEST_MONGO_AUTH_DB", "ROBOCO_TEST_MONGO_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			e, ok := engine.Lookup(tt.engine)
			if !ok {
				t.Fatal("not registered")
			}
			if e.Slug() != tt.slug || e.Images().Default != tt.image || e.Port() != tt.port {
				t.Errorf("slug %s image %s port %d", e.Slug(), e.Images().Default, e.Port())
			}
			if got := engine.ContainerName(e, "be-dev-1"); got != "roboco-sandbox-"+tt.slug+"-be-dev-1" {
				t.Errorf("container name %s", got)
			}
			var got []string
			for k := range e.Publish("h", "p") {
				got = append(got, k)
			}
			if !slices.Equal(sorted(got), sorted(tt.published)) {
				t.Errorf("publishes %v, want %v", sorted(got), sorted(tt.published))
			}
			// What the API module tells orchestrators must be what is published.
			keys, ok := sandboxv1.KeysOf(sandboxv1.Engine(tt.engine))
			api := slices.DeleteFunc([]string{keys.Host, keys.Port, keys.User, keys.Password, keys.Database, keys.URL},
				func(k string) bool { return k == "" })
			if !ok || !slices.Equal(sorted(api), sorted(tt.published)) || keys.Password != e.PasswordKey() {
				t.Errorf("api KeysOf: %+v (known %v), want the published %v and password key %s", keys, ok, tt.published, e.PasswordKey())
			}
		})
	}
	mongo, _ := engine.Lookup("mongo")
	if v := mongo.Publish("h", "p")["ROBOCO_TEST_MONGO_AUTH_DB"]; v != "admin" {
		t.Errorf("mongo AUTH_DB %q, want admin", v)
	}
}

func TestProbesKeepPasswordsOutOfArgvAndUseTheContainerAddress(t *testing.T) {
	const password, addr = "s3cr3t-pw-0123456789", "172.18.0.7"
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			steps := map[string]engine.Step{"probe": e.Probe(password, addr)}
			if len(e.Features()) > 0 {
				steps["verify"], _ = e.VerifyFeatures(password, addr)
				activate, err := e.ActivateFeatures(password, addr, e.Features())
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range activate {
					steps["activate"+string(rune('0'+i))] = s
				}
			}
			for name, s := range steps {
				argv := strings.Join(s.Argv, " ")
				var env []string
				for k, v := range s.Env {
					env = append(env, k+"="+v)
				}
				if strings.Contains(argv, password) {
					t.Errorf("%s argv carries the password: %s", name, argv)
				}
				if !strings.Contains(argv+" "+strings.Join(env, " "), addr) {
					t.Errorf("%s does not target the container address %s", name, addr)
				}
				for _, loop := range []string{"localhost", "127.0.0.1", "::1"} {
					if strings.Contains(argv+" "+strings.Join(env, " "), loop) {
						t.Errorf("%s targets loopback (%s), which the init server answers on", name, loop)
					}
				}
				if s.Timeout <= 0 {
					t.Errorf("%s has no timeout", name)
				}
			}
			if e.ProbeDeadline() < e.Probe(password, addr).Timeout {
				t.Errorf("probe deadline %s shorter than one probe", e.ProbeDeadline())
			}
		})
	}
}

// TestNoPasswordInEnvOrCommand: docker inspect shows a container's Env and Cmd
// to anyone who may use the Docker socket; the password reaches the entrypoint
// in a file written before start.
func TestNoPasswordInEnvOrCommand(t *testing.T) {
	const password = "s3cr3t-pw-0123456789"
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			c := e.Container(password, e.Features())
			shown := fmt.Sprint(c.Env, c.Cmd)
			if strings.Contains(shown, password) {
				t.Errorf("env or command carries the password: %s", shown)
			}
			delivered := false
			for path, content := range c.Secrets {
				if !strings.HasPrefix(path, engine.SecretsDir) {
					t.Errorf("secret %s outside %s", path, engine.SecretsDir)
				}
				delivered = delivered || strings.Contains(content, password)
				// The entrypoint finds it through a *_FILE variable or the command.
				if !strings.Contains(shown, path) {
					t.Errorf("secret %s is named by neither env nor command: %s", path, shown)
				}
			}
			if !delivered {
				t.Errorf("no secret file holds the password: %v", c.Secrets)
			}
			if !slices.IsSorted(c.CapAdd) || slices.Contains(c.CapAdd, "ALL") || len(c.CapAdd) == 0 {
				t.Errorf("capabilities %v: want a sorted, minimal list", c.CapAdd)
			}
		})
	}
}

func TestFeatureStatementsUseAllowlistedNamesOnly(t *testing.T) {
	hostile := []string{"plpython3u", `vector"; DROP TABLE x; --`, "VECTOR", "search ../../evil.so", ""}
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			for _, f := range hostile {
				steps, err := e.ActivateFeatures("pw", "10.0.0.2", []string{f})
				if err == nil || len(steps) > 0 {
					t.Errorf("feature %q accepted: %v", f, steps)
				} else if !strings.Contains(err.Error(), "allowed:") {
					t.Errorf("error %q does not name what is allowed", err)
				}
				if cmd := strings.Join(e.Container("pw", []string{f}).Cmd, " "); f != "" && strings.Contains(cmd, f) {
					t.Errorf("command carries unallowlisted %q: %s", f, cmd)
				}
			}
			for _, f := range e.Features() {
				steps, err := e.ActivateFeatures("pw", "10.0.0.2", []string{f})
				if err != nil {
					t.Fatalf("%s refused: %v", f, err)
				}
				for _, s := range steps {
					stmt := s.Argv[len(s.Argv)-1]
					// Only the fixed template and a quoted allowlisted identifier remain.
					if !regexp.MustCompile(`^(CREATE EXTENSION IF NOT EXISTS "[a-z_-]+";)+$`).MatchString(stmt) {
						t.Errorf("%s: statement %q is not built from the template", f, stmt)
					}
				}
			}
		})
	}
}

func TestVerifyParsers(t *testing.T) {
	tests := []struct {
		engine, stdout string
		want           []string
	}{
		{"postgres", "plpgsql\nvector\ncitext\n", []string{"vector", "citext"}},
		{"postgres", "plpgsql\nuuid-ossp\npg_trgm\npostgis\n", []string{"postgis", "pg_trgm", "uuid-ossp"}},
		{"postgres", "", nil},
		{"redis", "name\nsearch\nver\n21005\nname\nReJSON\nver\n20609\n", []string{"search", "json"}},
		{"redis", "name\nbf\nver\n1\n", []string{"bloom"}},
		{"redis", "name\nft\nver\n10202\n", []string{"search"}},
		{"redis", "", nil},
	}
	for _, tt := range tests {
		e, _ := engine.Lookup(tt.engine)
		_, parse := e.VerifyFeatures("pw", "10.0.0.2")
		if got := parse(tt.stdout); !slices.Equal(got, tt.want) {
			t.Errorf("%s parse(%q) = %v, want %v", tt.engine, tt.stdout, got, tt.want)
		}
	}
	if got := engine.Missing([]string{"vector", "postgis"}, []string{"vector"}); !slices.Equal(got, []string{"postgis"}) {
		t.Errorf("Missing = %v", got)
	}
}

func TestStepPassed(t *testing.T) {
	s := engine.Step{Expect: "PONG"}
	for _, tt := range []struct {
		code int
		out  string
		want bool
	}{{0, "PONG\n", true}, {0, "NOAUTH Authentication required.", false}, {1, "PONG", false}} {
		if got := s.Passed(tt.code, tt.out); got != tt.want {
			t.Errorf("Passed(%d, %q) = %v", tt.code, tt.out, got)
		}
	}
}

func TestImagesFor(t *testing.T) {
	pg, _ := engine.Lookup("postgres")
	if got := pg.Images().For(nil); got != "postgres:16-alpine" {
		t.Errorf("bare request got %s", got)
	}
	if got := pg.Images().For([]string{"vector"}); got != pg.Images().KitchenSink {
		t.Errorf("feature request got %s", got)
	}
}

func TestNewPassword(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p, err := engine.NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p)*4 < 128 || seen[p] {
			t.Fatalf("weak or repeated password %q", p)
		}
		seen[p] = true
	}
}

// TestHostNameIsADNSLabel: the published host must resolve. A 63-character agentID
// (the API's limit) makes container names of up to 84 characters, which resolvers
// refuse, so such services are published under a shorter alias.
func TestHostNameIsADNSLabel(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	long := strings.Repeat("a", 50) + "-agent-00001" // 62 characters
	for _, e := range engine.All() {
		t.Run(e.Name(), func(t *testing.T) {
			if got, want := engine.HostName(e, "be-dev-1"), engine.ContainerName(e, "be-dev-1"); got != want {
				t.Errorf("short agentID: host %q, want the container name %q", got, want)
			}
			seen := map[string]string{}
			for _, agentID := range []string{long, long[:len(long)-1] + "2", strings.Repeat("x", 63), strings.Repeat("x", 63-len(e.Slug()))} {
				host := engine.HostName(e, agentID)
				if !label.MatchString(host) {
					t.Errorf("agentID %s: host %q is not a DNS label", agentID, host)
				}
				if host != engine.HostName(e, agentID) {
					t.Errorf("agentID %s: host name is not stable", agentID)
				}
				if other, dup := seen[host]; dup {
					t.Errorf("agentIDs %s and %s share host %q", other, agentID, host)
				}
				seen[host] = agentID
				if name := engine.ContainerName(e, agentID); len(name) > 63 && !strings.HasPrefix(name, host[:40]) {
					t.Errorf("host %q does not start like its container %q, so people cannot tell which it is", host, name)
				}
			}
		})
	}
}
