package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// managerAccount is the manager's service account in config/default.
const managerAccount = "system:serviceaccount:sandbox-system:sandbox-controller-controller-manager"

// TestSecureMetrics: with --metrics-secure, /metrics answers only a token that
// the shipped metrics-reader ClusterRole is bound to, and the manager needs no
// more than its shipped RBAC to check it. The certificate is self-signed, or the
// one --metrics-cert-dir names.
func TestSecureMetrics(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubectl := func(args ...string) string { t.Helper(); return env.MustKubectl(t, args...) }
	kubectl("apply", "--server-side", "-k", filepath.Join(testenv.Root(), "config", "default"))
	kubectl("create", "namespace", "monitoring")
	kubectl("create", "serviceaccount", "prometheus", "-n", "monitoring")
	kubectl("create", "serviceaccount", "stranger", "-n", "monitoring")
	kubectl("create", "clusterrolebinding", "prometheus-metrics", "--clusterrole=sandbox-controller-metrics-reader",
		"--serviceaccount=monitoring:prometheus")
	tokens := map[string]string{
		"none":       "",
		"prometheus": kubectl("create", "token", "prometheus", "-n", "monitoring"),
		"stranger":   kubectl("create", "token", "stranger", "-n", "monitoring"),
	}

	// The manager acts as its own service account, with config/default's RBAC only.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: managerAccount}
	selfSigned := startManager(t, cfg, "--metrics-secure")
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for who, want := range map[string]int{"none": http.StatusUnauthorized, "stranger": http.StatusForbidden, "prometheus": http.StatusOK} {
		code, body := scrape(t, insecure, selfSigned, tokens[who])
		if code != want {
			t.Errorf("GET /metrics as %s: %d, want %d (%.200s)", who, code, want, body)
		}
		if want == http.StatusOK && !strings.Contains(body, "# TYPE sandbox_") {
			t.Errorf("GET /metrics as %s: no sandbox_ metrics in\n%.500s", who, body)
		}
	}

	dir, pool := writeCert(t)
	given := startManager(t, cfg, "--metrics-secure", "--metrics-cert-dir="+dir)
	verifying := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := scrape(t, verifying, given, tokens["prometheus"]); code != http.StatusOK {
		t.Errorf("GET /metrics with the certificate of --metrics-cert-dir: %d %.200s", code, body)
	}
}

// startManager starts a manager (no controllers) with args and returns its
// metrics address once it serves.
func startManager(t *testing.T, cfg *rest.Config, args ...string) string {
	t.Helper()
	addr := testenv.FreeAddr(t)
	s, err := parseSettings(append(args, "--metrics-bind-address="+addr, "--health-probe-bind-address=0"), noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, managerOptions(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return addr
		}
	}
	t.Fatalf("the metrics server did not listen on %s", addr)
	return ""
}

func scrape(t *testing.T, c *http.Client, addr, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", req.URL, err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// writeCert writes a self-signed tls.crt and tls.key for 127.0.0.1 into a new
// directory, and returns it with a pool that trusts the certificate.
func writeCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandbox-controller-metrics"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return dir, pool
}
