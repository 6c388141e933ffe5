// Command controlplane runs a local Kubernetes control plane (etcd and
// kube-apiserver through controller-runtime's envtest, and kube-controller-manager:
// the binaries `make envtest` builds into bin/k8s), writes an admin kubeconfig for
// it, and keeps it running until SIGTERM or SIGINT, when it stops all three. The
// demo runs it (hack/demo.sh). With the controller manager it behaves like a
// cluster where users notice: namespace deletion, garbage collection of
// ownerReferences, ResourceQuota usage. It has no scheduler and no nodes.
//
//	go run ./hack/controlplane --kubeconfig bin/demo/kubeconfig --state-dir bin/demo/state
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/roboco-sandbox/sandbox-controller/internal/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	f, err := parseFlags()
	if err != nil {
		return err
	}
	te, err := environment(f)
	if err != nil {
		return err
	}
	// Note: the signal handler is in place before the processes start, so a stop
	// that arrives during start-up still stops them.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	kcm, err := startAll(ctx, te, f)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return stopAll(te, kcm, f.kubeconfig)
}

// flags are the command line's settings.
type flags struct {
	assets, kubeconfig, stateDir string
	crds                         stringList
}

func parseFlags() (flags, error) {
	var f flags
	// Note: a flag set of our own; controller-runtime registers --kubeconfig on the default one.
	fs := flag.NewFlagSet("controlplane", flag.ExitOnError)
	fs.StringVar(&f.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"folder holding kube-apiserver, kube-controller-manager and etcd (default $KUBEBUILDER_ASSETS, else the newest bin/k8s/*)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (required)")
	fs.StringVar(&f.stateDir, "state-dir", "", "folder for etcd's data and the API server's certificates, emptied at start (default: temporary, removed on stop)")
	fs.Var(&f.crds, "crds", "a folder of CRD manifests to install at start (repeatable; default none)")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage: controlplane --kubeconfig PATH [flags]\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	if f.kubeconfig == "" {
		fs.Usage()
		return f, errors.New("--kubeconfig is required")
	}
	if f.assets == "" {
		found, _ := filepath.Glob(filepath.Join("bin", "k8s", "*", "kube-apiserver"))
		sort.Strings(found)
		if len(found) == 0 {
			return f, errors.New("no kube-apiserver under bin/k8s: run hack/build-envtest.sh (make envtest), or pass --assets")
		}
		f.assets = filepath.Dir(found[len(found)-1])
	}
	return f, nil
}

// environment is the envtest control plane the flags ask for, its state folder
// emptied.
func environment(f flags) (*envtest.Environment, error) {
	te := &envtest.Environment{
		BinaryAssetsDirectory: f.assets,
		CRDDirectoryPaths:     f.crds,
		ErrorIfCRDPathMissing: true,
	}
	if f.stateDir == "" {
		return te, nil
	}
	etcdDir, certDir := filepath.Join(f.stateDir, "etcd"), filepath.Join(f.stateDir, "apiserver")
	for _, d := range []string{etcdDir, certDir} {
		// Note: every start is a fresh cluster; envtest panics on a previous
		// run's certificates.
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	te.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir}
	te.ControlPlane.APIServer = &envtest.APIServer{CertDir: certDir}
	return te, nil
}

// startAll starts etcd, kube-apiserver and kube-controller-manager and writes
// the kubeconfig; on a failure it stops what it had started.
func startAll(ctx context.Context, te *envtest.Environment, f flags) (*controlplane.ControllerManager, error) {
	t0 := time.Now()
	cfg, err := start(te)
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", f.assets, err)
	}
	kcm, err := controlplane.StartControllerManager(ctx, te, f.assets, kcmLog(f.stateDir))
	if err != nil {
		_ = te.Stop()
		return nil, err
	}
	if err := writeFileAtomic(f.kubeconfig, te.KubeConfig); err != nil {
		_ = kcm.Stop()
		_ = te.Stop()
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	fmt.Printf("control plane up in %s: API server %s, kubeconfig %s (pid %d; SIGTERM stops it)\n",
		time.Since(t0).Round(100*time.Millisecond), cfg.Host, f.kubeconfig, os.Getpid())
	return kcm, nil
}

// stopAll removes the kubeconfig and stops the three processes.
func stopAll(te *envtest.Environment, kcm *controlplane.ControllerManager, kubeconfig string) error {
	fmt.Println("stopping the control plane")
	_ = os.Remove(kubeconfig)
	if err := kcm.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping %s: %v\n", controlplane.Binary, err)
	}
	if err := te.Stop(); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	fmt.Println("control plane stopped")
	return nil
}

// start is te.Start, with a panic turned into an error so that the caller still
// stops whatever had started (envtest panics on some failures, leaving etcd behind).
func start(te *envtest.Environment) (cfg *rest.Config, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("envtest panicked: %v", p)
		}
	}()
	return te.Start()
}

// kcmLog is where kube-controller-manager logs: a file in the state folder, or
// nowhere without one (its output would drown this process's).
func kcmLog(stateDir string) io.Writer {
	if stateDir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(stateDir, "kube-controller-manager.log"))
	if err != nil {
		return nil
	}
	return f
}

// writeFileAtomic writes data to path through a temporary file, so a reader that
// sees the file sees all of it.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
