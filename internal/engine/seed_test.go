package engine

import (
	"slices"
	"strings"
	"testing"
)

// TestInitKeys: each engine runs its own suffix in lexical order, leaves the
// others' keys, and a key no engine runs is named.
func TestInitKeys(t *testing.T) {
	keys := []string{"20-rows.sql", "b.js", "10-schema.sql", "keys.redis", "a.js"}
	for name, want := range map[string][]string{
		"postgres": {"10-schema.sql", "20-rows.sql"}, "mongo": {"a.js", "b.js"}, "redis": {"keys.redis"},
	} {
		e, _ := Lookup(name)
		got, other := InitKeys(e, keys)
		if !slices.Equal(got, want) || other != "" {
			t.Errorf("%s runs %v (other %q), want %v", name, got, other, want)
		}
	}
	pg, _ := Lookup("postgres")
	if _, other := InitKeys(pg, []string{"a.sql", "README.md"}); other != "README.md" {
		t.Errorf("a key no engine runs: %q, want README.md", other)
	}
}

// TestSeedKeepsPasswordsOffArgv: the init step's command line holds no password.
func TestSeedKeepsPasswordsOffArgv(t *testing.T) {
	for _, e := range All() {
		step := Seed(e, "s3cret-pw", "10.0.0.5", []string{"a" + e.Init("", "").Suffix}, 0, 0)
		for _, a := range step.Argv {
			if strings.Contains(a, "s3cret-pw") {
				t.Errorf("%s: the password is on the init step's command line", e.Name())
			}
		}
		if step.Timeout <= 0 {
			t.Errorf("%s: the init step is unbounded", e.Name())
		}
	}
}
