// Package testenv holds what the test suites share: the real test control plane
// (etcd and kube-apiserver built by `make envtest` into bin/, with the generated
// CRDs installed, the built kubectl against it, and kube-controller-manager for
// the suites that need a cluster's behaviour), waiting for a state
// (WaitFor), the engine test images (EngineImages), counting Docker API calls
// (CountDockerCalls), leaked volumes (NoVolumesLeaked), Docker daemons of a
// suite's own (Dockerd) and the benchmarks' switch and median. It is imported by
// tests only.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/roboco-sandbox/sandbox-controller/internal/controlplane"
)

// Root is the repository root, found from this file's location.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is the folder holding kube-apiserver, etcd and kubectl: $KUBEBUILDER_ASSETS
// when set (the Makefile sets it), else the newest build under bin/k8s.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	found, _ := filepath.Glob(filepath.Join(Root(), "bin", "k8s", "*", "kube-apiserver"))
	sort.Strings(found)
	if len(found) == 0 {
		return "", errors.New("no control-plane binaries under bin/k8s: run `make envtest` (or `make test`, which builds them)")
	}
	return filepath.Dir(found[len(found)-1]), nil
}

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config     *rest.Config
	kubeconfig string
	kcm        *controlplane.ControllerManager
}

// Start starts a control plane with the CRDs of config/crd/bases installed.
func Start() (*Env, error) {
	return start(nil, filepath.Join(Root(), "config", "crd", "bases"))
}

// StartWith starts a control plane with the CRDs of crdDir installed (another
// release's, say) and the API server's flags apiServerFlags set (an audit log,
// say): a benchmark's own control plane beside the suite's.
func StartWith(crdDir string, apiServerFlags map[string]string) (*Env, error) {
	return start(apiServerFlags, crdDir)
}

// StartCluster is Start with kube-controller-manager beside the API server, for a
// suite that needs a cluster's behaviour: namespace deletion, garbage collection,
// ResourceQuota usage.
func StartCluster() (*Env, error) {
	e, err := Start()
	if err != nil {
		return nil, err
	}
	dir, _ := AssetsDir()
	if e.kcm, err = controlplane.StartControllerManager(context.Background(), e.Environment, dir, nil); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// StartWithoutCRDs starts a control plane with no CRD installed, for a test
// that installs them its own way (the Helm chart's).
func StartWithoutCRDs() (*Env, error) { return start(nil) }

func start(apiServerFlags map[string]string, crdDirs ...string) (*Env, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: len(crdDirs) > 0,
	}
	for k, v := range apiServerFlags {
		te.ControlPlane.GetAPIServer().Configure().Set(k, v)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest from %s: %w", dir, err)
	}
	kubeconfig, err := os.CreateTemp("", "sandbox-envtest-kubeconfig-*")
	if err == nil {
		_, err = kubeconfig.Write(te.KubeConfig)
		_ = kubeconfig.Close()
	}
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	return &Env{Environment: te, Config: cfg, kubeconfig: kubeconfig.Name()}, nil
}

// Stop stops the control plane and removes the kubeconfig.
func (e *Env) Stop() error {
	_ = os.Remove(e.kubeconfig)
	if e.kcm != nil {
		_ = e.kcm.Stop()
	}
	return e.Environment.Stop()
}

// Kubeconfig is the path of a kubeconfig file for this control plane.
func (e *Env) Kubeconfig() string { return e.kubeconfig }

// Kubectl runs the built kubectl against the control plane and returns its stdout;
// the error carries stderr.
func (e *Env) Kubectl(args ...string) (string, error) {
	return Kubectl(e.kubeconfig, args...)
}

// Kubectl runs the built kubectl against the control plane of kubeconfig and
// returns its stdout.
func Kubectl(kubeconfig string, args ...string) (string, error) {
	dir, err := AssetsDir()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// AdmissionPolicies are the ValidatingAdmissionPolicies, and their
// bindings, of rendered manifests (config/default's), as one manifest.
func AdmissionPolicies(rendered string) (manifest string, n int) {
	var docs []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if strings.Contains(doc, "kind: ValidatingAdmissionPolicy") {
			docs = append(docs, doc)
		}
	}
	return strings.Join(docs, "\n---\n"), len(docs)
}

// MustKubectl is Kubectl that fails the test on an error, and returns stdout
// trimmed.
func (e *Env) MustKubectl(t T, args ...string) string {
	t.Helper()
	out, err := e.Kubectl(args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// MustApply is MustKubectl("apply", args...) that waits out the API server's
// "not yet synced": an admission policy whose param kind (SandboxPolicy) was
// just installed refuses every request it judges until its informer has
// synced, a moment that grows with the machine's load. Any other refusal
// fails the test at once.
func (e *Env) MustApply(t T, args ...string) string {
	t.Helper()
	var out string
	WaitFor(t, 2*time.Minute, 200*time.Millisecond, "the admission policy's param kind synced", func() bool {
		var err error
		out, err = e.Kubectl(append([]string{"apply"}, args...)...)
		if err != nil && !strings.Contains(err.Error(), "not yet synced") {
			t.Fatalf("%v\n%s", err, out)
		}
		return err == nil
	})
	return strings.TrimSpace(out)
}
