package prometheus

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "grafana", "sandbox-controller.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("sandbox-controller.json: %v", err)
	}
	return d
}

// queries are the dashboard's PromQL expressions as Prometheus reads them once
// Grafana has put in its variables, by dashboard:<title>:<refId>.
func (d dashboard) queries(t *testing.T) map[string]string {
	t.Helper()
	vars := strings.NewReplacer("$namespace", ".*", "$__rate_interval", "5m")
	word := regexp.MustCompile(`[^a-z0-9]+`)
	out := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q queries nothing", p.Title)
			}
			for _, q := range p.Targets {
				name := "dashboard:" + strings.Trim(word.ReplaceAllString(strings.ToLower(p.Title), "_"), "_") + ":" + q.RefID
				if _, dup := out[name]; dup {
					t.Errorf("two queries are %s", name)
				}
				out[name] = vars.Replace(q.Expr)
			}
		}
	}
	walk(d.Panels)
	return out
}

// TestDashboardQueries: every query of the Grafana dashboard is PromQL that
// Prometheus accepts, and the main panels show what their titles say
// (config/grafana/dashboard_test.yaml), run with promtool.
func TestDashboardQueries(t *testing.T) {
	promtool := buildPromtool(t)
	queries := readDashboard(t).queries(t)
	var rules []map[string]string
	for _, name := range slices.Sorted(maps.Keys(queries)) {
		rules = append(rules, map[string]string{"record": name, "expr": queries[name]})
	}
	file, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "grafana", "dashboard_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"dashboard_rules.yaml": file, "dashboard_test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "dashboard_rules.yaml"}, {"test", "rules", "dashboard_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestDashboardReadsServedMetrics: every metric the dashboard reads is one the
// manager serves: ours are in the metrics table of docs/operating.md, controller-runtime's
// are named in the pinned controller-runtime's source.
func TestDashboardReadsServedMetrics(t *testing.T) {
	d := readDashboard(t)
	var all []string
	for _, q := range d.queries(t) {
		all = append(all, q)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			raw, _ := json.Marshal(v.Query)
			all = append(all, string(raw))
		}
	}
	text := strings.Join(all, "\n")
	checkDocumented(t, "the dashboard", text)
	runtime := controllerRuntimeMetrics(t)
	for _, m := range regexp.MustCompile(`\b(controller_runtime|workqueue)_[a-z_]+`).FindAllString(text, -1) {
		if !runtime[histogramBase(m)] {
			t.Errorf("the dashboard reads %s, which controller-runtime does not serve", m)
		}
	}
}

// controllerRuntimeMetrics are the metric names controller-runtime's source
// spells out: its controllers' literal names, and workqueue_<key> for the keys.
func controllerRuntimeMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("go list controller-runtime: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	names := map[string]bool{}
	for _, f := range []struct{ path, re, prefix string }{
		{"pkg/internal/controller/metrics/metrics.go", `Name:\s*"(controller_runtime_[a-z_]+)"`, ""},
		{"pkg/metrics/workqueue.go", `[A-Za-z]+Key\s*=\s*"([a-z_]+)"`, "workqueue_"},
	} {
		src, err := os.ReadFile(filepath.Join(dir, f.path))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(f.re).FindAllStringSubmatch(string(src), -1) {
			names[f.prefix+m[1]] = true
		}
	}
	if !names["controller_runtime_reconcile_total"] || !names["workqueue_depth"] {
		t.Fatalf("controller-runtime's metric names not found in %s: %v", dir, names)
	}
	return names
}

func histogramBase(m string) string {
	for _, s := range []string{"_bucket", "_count", "_sum"} {
		m = strings.TrimSuffix(m, s)
	}
	return m
}
