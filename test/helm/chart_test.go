// Package helm tests the Helm chart in config/helm/sandbox-controller with helm
// built from its own module (hack/tools/helm): it lints, renders the same objects
// as config/default, and installs, upgrades and uninstalls on a real API server.
package helm

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

const (
	release   = "sandbox-controller"
	namespace = "sandbox-system"
)

var chart = filepath.Join(testenv.Root(), "config", "helm", "sandbox-controller")

// helmLabels are the labels Helm adds to what config/default has.
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "helm.sh/chart"}

func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := testenv.Tool(t, "helm", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// objects splits rendered YAML into objects by kind/name, as generic JSON values.
func objects(t *testing.T, rendered string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(rendered, "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if o == nil {
			continue
		}
		meta, _ := o["metadata"].(map[string]any)
		out[o["kind"].(string)+"/"+meta["name"].(string)] = o
	}
	return out
}

func kustomize(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(testenv.Root(), "config", dir)).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/%s: %v", dir, err)
	}
	return objects(t, string(out))
}

func render(t *testing.T, set ...string) map[string]map[string]any {
	t.Helper()
	args := []string{"template", release, chart, "--namespace", namespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	objs := objects(t, helm(t, args...))
	for _, o := range objs {
		if o["kind"] == "CustomResourceDefinition" {
			continue // Helm installs crds/ as they are
		}
		labels, _ := o["metadata"].(map[string]any)["labels"].(map[string]any)
		for _, l := range helmLabels {
			if labels[l] == nil {
				t.Errorf("%s/%s lacks Helm's label %s", o["kind"], o["metadata"].(map[string]any)["name"], l)
			}
			delete(labels, l)
		}
	}
	return objs
}

// compare fails for each object that is in one set and not the other, or
// differs between them.
func compare(t *testing.T, what string, got, want map[string]map[string]any) {
	t.Helper()
	for _, key := range sortedKeys(want) {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: the chart renders no %s", what, key)
			continue
		}
		if !reflect.DeepEqual(g, want[key]) {
			gj, _ := json.MarshalIndent(g, "", "  ")
			wj, _ := json.MarshalIndent(want[key], "", "  ")
			t.Errorf("%s: %s differs\nchart:\n%s\nkustomize:\n%s", what, key, gj, wj)
		}
	}
	for _, key := range sortedKeys(got) {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: the chart also renders %s", what, key)
		}
	}
}

func sortedKeys(m map[string]map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestChartLints(t *testing.T) {
	helm(t, "lint", "--strict", chart)
	helm(t, "lint", "--strict", chart, "--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,metrics.certSecret=metrics-tls")
}

// TestChartRendersConfigDefault: with its defaults (and release name
// sandbox-controller) the chart renders config/default object by object, but for
// the Namespace (helm install --create-namespace), Helm's own labels and the
// CRDs' labels (Helm installs crds/ as they are); with
// monitoring on, also config/prometheus.
func TestChartRendersConfigDefault(t *testing.T) {
	want := kustomize(t, "default")
	delete(want, "Namespace/"+namespace)
	for _, o := range want {
		if o["kind"] == "CustomResourceDefinition" { // the chart's are config/crd/bases's, unlabelled
			delete(o["metadata"].(map[string]any), "labels")
		}
	}
	compare(t, "defaults", render(t, "image.tag=dev"), want)

	for k, o := range kustomize(t, "prometheus") {
		want[k] = o
	}
	compare(t, "monitoring on", render(t, "image.tag=dev", "serviceMonitor.enabled=true", "prometheusRule.enabled=true"), want)
}

// TestChartMetricsCertificate: metrics.certSecret mounts that Secret and points
// --metrics-cert-dir at it.
func TestChartMetricsCertificate(t *testing.T) {
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args         []string `json:"args"`
						VolumeMounts []struct {
							Name, MountPath string
						} `json:"volumeMounts"`
					} `json:"containers"`
					Volumes []struct {
						Name   string `json:"name"`
						Secret *struct {
							SecretName string `json:"secretName"`
						} `json:"secret"`
					} `json:"volumes"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	raw, _ := json.Marshal(render(t, "metrics.certSecret=metrics-tls")["Deployment/"+release+"-controller-manager"])
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	mounted := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "metrics-tls" {
			if dir := mounted[v.Name]; dir == "" || !slices.Contains(pod.Containers[0].Args, "--metrics-cert-dir="+dir) {
				t.Errorf("Secret metrics-tls is mounted at %q, args %v: want --metrics-cert-dir there", dir, pod.Containers[0].Args)
			}
			return
		}
	}
	t.Errorf("no volume of Secret metrics-tls in %+v", pod.Volumes)
}
