package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// plane is envtest's etcd and kube-apiserver. The API server can be restarted
// alone: its certificates live in a folder of ours (envtest removes and remakes a
// folder it chose itself), its port is kept, and the client CA stays in memory,
// so the kubeconfig written at start keeps working.
type plane struct {
	te         *envtest.Environment
	cfg        *rest.Config
	kubeconfig string
}

func startPlane(dir string) (*plane, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(dir, "apiserver")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(testenv.Root(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// Note: a busy machine's API server can take more than envtest's default 20s
	// to start.
	te.ControlPlane.APIServer = &envtest.APIServer{CertDir: certs, StopTimeout: 20 * time.Second, StartTimeout: 2 * time.Minute}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest from %s: %w", assets, err)
	}
	p := &plane{te: te, cfg: cfg, kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := os.WriteFile(p.kubeconfig, te.KubeConfig, 0o600); err != nil {
		_ = te.Stop()
		return nil, err
	}
	return p, nil
}

// stopAPIServer stops kube-apiserver (etcd keeps running): SIGTERM, and SIGKILL
// when it has not ended within its StopTimeout (it waits for its watches), which
// is as much a restart.
func (p *plane) stopAPIServer() error {
	if err := p.te.ControlPlane.APIServer.Stop(); err != nil && !strings.HasPrefix(err.Error(), "timeout waiting for process") {
		return err
	}
	return nil
}

// startAPIServer starts it again on the same port, certificates and etcd.
func (p *plane) startAPIServer() error { return p.te.ControlPlane.APIServer.Start() }

func (p *plane) stop() { _ = p.te.Stop() }
