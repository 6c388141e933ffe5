package dockerhost

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/moby/moby/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// errInsecure refuses a tcp:// endpoint without TLS.
var errInsecure = errors.New("a tcp:// endpoint needs spec.tls: a Docker daemon's TCP socket without TLS gives root on its machine to anyone who reaches it")

// dial makes the driver of a DockerHost from its spec; the TLS material is read
// live (the manager caches only credentials Secrets). tlsVersion is the Secret's
// resourceVersion, so a rotated certificate re-dials.
func dial(ctx context.Context, api crclient.Reader, h *sandboxv1.DockerHost, userAgent string) (driver dd.Driver, tlsVersion string, err error) {
	opts := []dd.Option{dd.WithHost(h.Spec.Endpoint)}
	if userAgent != "" {
		opts = append(opts, dd.WithClientOptions(client.WithUserAgent(userAgent)))
	}
	if strings.HasPrefix(h.Spec.Endpoint, "tcp://") {
		if h.Spec.TLS == nil {
			return nil, "", errInsecure
		}
		cfg, version, err := tlsConfig(ctx, api, h.Spec.TLS.SecretRef)
		if err != nil {
			return nil, "", err
		}
		tlsVersion = version
		opts = append(opts, dd.WithClientOptions(client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}})))
	}
	d, err := dd.New(opts...)
	if err != nil {
		return nil, "", err
	}
	return d, tlsVersion, nil
}

// tlsConfig reads ca.crt, tls.crt and tls.key from the Secret ref names.
func tlsConfig(ctx context.Context, api crclient.Reader, ref sandboxv1.SecretReference) (*tls.Config, string, error) {
	var s corev1.Secret
	if err := api.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &s); err != nil {
		return nil, "", fmt.Errorf("reading the TLS Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	cert, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		return nil, "", fmt.Errorf("the TLS Secret %s/%s: tls.crt and tls.key: %w", ref.Namespace, ref.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		return nil, "", fmt.Errorf("the TLS Secret %s/%s: ca.crt holds no PEM certificate", ref.Namespace, ref.Name)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}}, s.ResourceVersion, nil
}

// ensureSet makes sure this manager drives h: its controllers set up, on a
// driver dialled from its spec (the implicit host's is the manager's own).
func (r *Reconciler) ensureSet(ctx context.Context, h *sandboxv1.DockerHost) (DrivenHost, error) {
	hs, ok := r.Fleet.Host(h.Name)
	if ok && h.Name == r.Implicit {
		return hs, nil
	}
	if ok {
		if endpoint, tlsVersion := hs.Dialled(); endpoint == h.Spec.Endpoint && tlsVersion == currentTLSVersion(ctx, r.API, h) {
			return hs, nil
		}
	}
	driver, tlsVersion, err := r.dialHost(ctx, h)
	if err != nil {
		return nil, err
	}
	if ok {
		logf.FromContext(ctx).Info("Re-dialling the Docker host", "endpoint", h.Spec.Endpoint)
		hs.Redial(driver, h.Spec.Endpoint, tlsVersion)
		return hs, nil
	}
	hs, err = r.Fleet.AddDialled(h.Name, driver, h.Spec.Endpoint, tlsVersion)
	if err != nil {
		return nil, fmt.Errorf("setting up the controllers of Docker host %s: %w", h.Name, err)
	}
	return hs, nil
}

func (r *Reconciler) dialHost(ctx context.Context, h *sandboxv1.DockerHost) (dd.Driver, string, error) {
	if r.Dial != nil {
		d, err := r.Dial(ctx, h)
		return d, "", err
	}
	return dial(ctx, r.API, h, r.UserAgent)
}

// currentTLSVersion is the resourceVersion of h's TLS Secret ("" without TLS or
// when it cannot be read: the dial then says why).
func currentTLSVersion(ctx context.Context, api crclient.Reader, h *sandboxv1.DockerHost) string {
	if h.Spec.TLS == nil {
		return ""
	}
	_, version, err := tlsConfig(ctx, api, h.Spec.TLS.SecretRef)
	if err != nil {
		return ""
	}
	return version
}
