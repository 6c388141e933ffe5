// Package controlplane adds kube-controller-manager to a local control plane
// (controller-runtime's envtest: etcd and kube-apiserver), so that it behaves
// like a cluster: a deleted namespace empties and goes, ownerReferences are
// garbage-collected, and object-count ResourceQuotas get their usage and are
// enforced. The demo (hack/controlplane) and the suites that need a cluster's
// behaviour (internal/testenv) start it; the binary is the one `make envtest`
// builds from the same Kubernetes module as the API server.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Binary is kube-controller-manager's file name in the assets folder.
const Binary = "kube-controller-manager"

// readyTimeout bounds the wait for the controllers to act; generous, since on a
// loaded two-core machine the process takes seconds just to start its informers.
const readyTimeout = 3 * time.Minute

// ControllerManager is a running kube-controller-manager.
type ControllerManager struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
	err  error
}

// StartControllerManager runs kube-controller-manager from assets against te
// (started) with the default controllers, and returns once they act: the
// service-account controller has made the default namespace's ServiceAccount.
// Its output goes to log (nil: discarded).
func StartControllerManager(ctx context.Context, te *envtest.Environment, assets string, log io.Writer) (*ControllerManager, error) {
	bin := filepath.Join(assets, Binary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run hack/build-envtest.sh: make envtest)", bin, err)
	}
	dir, err := os.MkdirTemp("", "sandbox-kcm-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, te.KubeConfig, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cm := &ControllerManager{dir: dir, done: make(chan struct{})}
	cm.cmd = exec.Command(bin, args(kubeconfig, te.ControlPlane.APIServer.CertDir)...)
	if log == nil {
		log = io.Discard
	}
	cm.cmd.Stdout, cm.cmd.Stderr = log, log
	// Note: its own process group, so that a Ctrl-C meant for the parent reaches
	// it only through Stop, after the parent's own clean-up has begun.
	cm.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cm.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { cm.err = cm.cmd.Wait(); close(cm.done) }()
	if err := cm.waitActing(ctx, te); err != nil {
		_ = cm.Stop()
		return nil, err
	}
	return cm, nil
}

// args are the flags: every default controller, no leader election (one
// process), no serving port (suites run several control planes side by side),
// and the API server's service-account signing key so that the token
// controller runs as in a cluster.
func args(kubeconfig, certDir string) []string {
	a := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*",
		"--v=1",
	}
	// Note: envtest's API server signs service-account tokens with this key
	// (its file name is envtest's); without it the token controller stays off.
	if key := filepath.Join(certDir, "sa-signer.key"); fileExists(key) {
		a = append(a, "--service-account-private-key-file="+key)
	}
	return a
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// waitActing waits until the controllers act, or the process ends.
func (cm *ControllerManager) waitActing(ctx context.Context, te *envtest.Environment) error {
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-cm.done:
			return false, fmt.Errorf("%s exited: %w", Binary, cm.err)
		default:
		}
		_, err := cs.CoreV1().ServiceAccounts(corev1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to act (the default ServiceAccount): %w", Binary, err)
	}
	return nil
}

// Stop ends the process (SIGTERM, then SIGKILL after 10 s) and removes its files.
func (cm *ControllerManager) Stop() error {
	defer func() { _ = os.RemoveAll(cm.dir) }()
	select {
	case <-cm.done:
		return nil
	default:
	}
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cm.done:
	case <-time.After(10 * time.Second):
		_ = cm.cmd.Process.Kill()
		<-cm.done
	}
	var exit *exec.ExitError
	if cm.err != nil && !errors.As(cm.err, &exit) {
		return cm.err
	}
	return nil
}
