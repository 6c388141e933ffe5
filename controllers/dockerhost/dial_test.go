package dockerhost

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// pki is a CA and what it signed.
type pki struct {
	ca  *x509.Certificate
	key *ecdsa.PrivateKey
	pem []byte
}

func newPKI(t *testing.T) pki {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "docker CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return pki{ca: ca, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf for a server (at 127.0.0.1) or a client; PEM cert and key.
func (p pki) issue(t *testing.T, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// A tcp:// DockerHost is dialled with the TLS material of its Secret, and only with it.
func TestDialTLS(t *testing.T) {
	daemonCA, clientCA := newPKI(t), newPKI(t)
	serverCert, serverKey := daemonCA.issue(t, true)
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.ca)
	srv := fakedocker.New(fakedocker.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}))
	if err := srv.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	clientCert, clientKey := clientCA.issue(t, false)
	strangerCert, strangerKey := newPKI(t).issue(t, false)
	secret := func(name string, crt, key []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sandbox-system", Name: name},
			Data: map[string][]byte{"ca.crt": daemonCA.pem, "tls.crt": crt, "tls.key": key}}
	}
	api := fake.NewClientBuilder().WithObjects(secret("good", clientCert, clientKey), secret("stranger", strangerCert, strangerKey)).Build()
	host := func(ref string) *sandboxv1.DockerHost {
		h := &sandboxv1.DockerHost{Spec: sandboxv1.DockerHostSpec{Endpoint: "tcp://" + srv.Host()[len("tcp://"):]}}
		if ref != "" {
			h.Spec.TLS = &sandboxv1.DockerHostTLS{SecretRef: sandboxv1.SecretReference{Namespace: "sandbox-system", Name: ref}}
		}
		return h
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, _, err := dial(ctx, api, host(""), ""); !errors.Is(err, errInsecure) {
		t.Errorf("tcp without tls: %v, want errInsecure", err)
	}
	d, version, err := dial(ctx, api, host("good"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Ping(ctx); err != nil || version == "" {
		t.Errorf("with the Secret's certificate: ping %v, Secret version %q", err, version)
	}
	d, _, err = dial(ctx, api, host("stranger"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Ping(ctx); err == nil {
		t.Error("a client certificate the daemon's CA did not sign was accepted")
	}
	if _, _, err := dial(ctx, api, host("missing"), "test"); err == nil {
		t.Error("a missing Secret dialled")
	}
}
