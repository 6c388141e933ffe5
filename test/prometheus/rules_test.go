// Package prometheus unit-tests the alert rules in config/prometheus with
// promtool, built from Prometheus' own module (hack/tools/promtool).
package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

func TestAlertRules(t *testing.T) {
	promtool := buildPromtool(t)
	dir := t.TempDir()
	rules := extractRules(t, filepath.Join(testenv.Root(), "config", "prometheus", "alerts.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "prometheus", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every metric the rules read is one the manager serves (documented in the
// metrics table of docs/operating.md), so a renamed metric cannot silently mute
// an alert.
func TestAlertRulesReadServedMetrics(t *testing.T) {
	checkDocumented(t, "the rules", string(extractRules(t, filepath.Join(testenv.Root(), "config", "prometheus", "alerts.yaml"))))
}

// metricsDoc is the page whose metrics table lists every sandbox_ metric the
// manager serves.
var metricsDoc = filepath.Join("docs", "operating.md")

// checkDocumented fails for each sandbox_ metric in text that the metrics table
// of docs/operating.md does not list.
func checkDocumented(t *testing.T, what, text string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testenv.Root(), metricsDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\bsandbox_[a-z_]+`).FindAllString(text, -1) {
		base := histogramBase(m)
		if !strings.Contains(string(doc), "| `"+base+"{") && !strings.Contains(string(doc), "| `"+base+"`") {
			t.Errorf("%s read %s, which the metrics table of %s does not list", what, m, metricsDoc)
		}
	}
}

// extractRules returns the rule groups of a PrometheusRule as a Prometheus rules file.
func extractRules(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil || rule.Kind != "PrometheusRule" || len(rule.Spec.Groups) == 0 {
		t.Fatalf("%s is not a PrometheusRule with groups (%v)", path, err)
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// buildPromtool builds (once per machine: cached in bin/) the pinned promtool.
func buildPromtool(t *testing.T) string {
	t.Helper()
	return testenv.Tool(t, "promtool", "github.com/prometheus/prometheus", "github.com/prometheus/prometheus/cmd/promtool")
}
