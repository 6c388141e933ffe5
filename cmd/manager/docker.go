package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/moby/moby/client"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// ownDocker connects to the manager's own Docker host (--docker-host), the
// implicit DockerHost; none when --docker-host-name is empty (a manager of
// registered DockerHosts only).
func ownDocker(ctx context.Context, s *settings) (dd.Driver, func(), error) {
	if s.dockerHostName == "" {
		return nil, func() {}, nil
	}
	driver, err := dd.New(dd.WithHost(s.dockerHost), dd.WithPullTimeout(s.pullTimeout),
		dd.WithClientOptions(client.WithUserAgent(userAgent())))
	if err != nil {
		return nil, nil, fmt.Errorf("--docker-host %q: %w", s.dockerHost, err)
	}
	info, err := waitForDocker(ctx, driver, s.dockerHost, s.dockerStartupTimeout)
	if err != nil {
		_ = driver.Close()
		return nil, nil, err
	}
	ctrl.Log.WithName("setup").Info("Docker answers", "host", s.dockerHost, "dockerHost", s.dockerHostName,
		"serverVersion", info.ServerVersion, "apiVersion", info.APIVersion)
	return driver, func() { _ = driver.Close() }, nil
}

// pingTimeout bounds one ping: at start-up, and per /readyz request.
const pingTimeout = 3 * time.Second

// waitForDocker pings until Docker answers or timeout passes (a daemon that starts
// together with the manager gets a moment), and explains what to check when it
// does not.
func waitForDocker(ctx context.Context, driver dd.Driver, host string, timeout time.Duration) (dd.ServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		pctx, pcancel := context.WithTimeout(ctx, pingTimeout)
		info, err := driver.Ping(pctx)
		pcancel()
		if err == nil {
			return info, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return dd.ServerInfo{}, dockerUnreachable(host, timeout, lastErr)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// dockerUnreachable is the start-up error when Docker does not answer: what failed
// and what to check, most likely cause first.
func dockerUnreachable(host string, timeout time.Duration, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Docker at %s did not answer within %s: %v\nCheck that:\n", host, timeout, err)
	if path, ok := strings.CutPrefix(host, "unix://"); ok {
		fmt.Fprintf(&b, "  - the Docker daemon runs on this machine and listens on %s (docker version; the daemon's log);\n", path)
		fmt.Fprintf(&b, "  - this process may use the socket: it needs read and write access to %s (root, or the socket's group, usually docker); in a Pod, the hostPath volume mounts it;\n", path)
	} else {
		b.WriteString("  - the Docker daemon runs on that host and listens on that address (docker -H " + host + " version);\n")
		b.WriteString("  - TLS matches: DOCKER_TLS_VERIFY and DOCKER_CERT_PATH for a tcp:// daemon that requires it;\n")
	}
	b.WriteString("  - the address is the intended one: --docker-host, else $DOCKER_HOST, else " + defaultDockerHost + ";\n")
	b.WriteString("  - a slow-starting daemon gets longer with --docker-startup-timeout.")
	return errors.New(b.String())
}

// readyzProbeLabels select no container: the /readyz list costs the daemon little
// but goes through its container store, as every reconcile does.
var readyzProbeLabels = map[string]string{"sandbox.roboco.io/readyz": "probe"}

// dockerReadyz is the /readyz check: not ready while Docker does not answer, within
// pingTimeout, a ping and a real call (a wedged daemon still answers pings while
// its container calls hang). Liveness (/healthz) never depends on Docker: an
// outage must not get the manager restarted over and over.
func dockerReadyz(driver dd.Driver) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), pingTimeout)
		defer cancel()
		if _, err := driver.Ping(ctx); err != nil {
			return fmt.Errorf("docker does not answer: %w", err)
		}
		if _, err := driver.List(ctx, readyzProbeLabels); err != nil {
			return fmt.Errorf("docker answers pings but not container calls: %w", err)
		}
		return nil
	}
}
