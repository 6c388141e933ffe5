package engine

import (
	"net/url"
	"testing"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// TestPublishedURLs: each engine's URL decodes back to exactly the published
// host, port, user, password and database, whatever characters they hold.
func TestPublishedURLs(t *testing.T) {
	for _, host := range []string{"roboco-sandbox-postgres-agent-1", "172.18.0.5", "fd00::5"} {
		for _, password := range []string{"Zk3xQ9", "p@ss:w/rd%?#[]&= +~"} {
			for _, name := range []string{"postgres", "redis", "mongo"} {
				e, _ := Lookup(name)
				keys, _ := sandboxv1.KeysOf(sandboxv1.Engine(name))
				vars := e.Publish(host, password)
				u, err := url.Parse(vars[keys.URL])
				if err != nil {
					t.Fatalf("%s: %s does not parse: %v", name, keys.URL, err)
				}
				pw, _ := u.User.Password()
				user := vars[keys.User]
				if name == "redis" {
					user = "default" // the user requirepass sets
				}
				if u.Hostname() != vars[keys.Host] || u.Port() != vars[keys.Port] || pw != password || u.User.Username() != user {
					t.Errorf("%s %q: %s decodes to host %q port %q user %q password %q; published %q %q %q %q",
						name, vars[keys.URL], keys.URL, u.Hostname(), u.Port(), u.User.Username(), pw,
						vars[keys.Host], vars[keys.Port], vars[keys.User], password)
				}
				want := map[string]string{"postgres": "postgresql", "redis": "redis", "mongo": "mongodb"}[name]
				if u.Scheme != want {
					t.Errorf("%s: scheme %q, want %q", name, u.Scheme, want)
				}
				switch name {
				case "postgres":
					if u.Path != "/"+vars[keys.Database] || u.Query().Get("sslmode") != "disable" {
						t.Errorf("postgres URL %s: want database %s and sslmode=disable", vars[keys.URL], vars[keys.Database])
					}
				case "redis":
					if u.Path != "/0" {
						t.Errorf("redis URL %s: want database 0", vars[keys.URL])
					}
				case "mongo":
					if u.Query().Get("authSource") != vars[keys.Database] {
						t.Errorf("mongo URL %s: want authSource %s", vars[keys.URL], vars[keys.Database])
					}
				}
			}
		}
	}
}
