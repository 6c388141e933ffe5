package e2e

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testclients"
)

// urlsWork proves each service's published URL (ROBOCO_TEST_*_URL, and its
// conventional name when the Sandbox asks for it) opens an authenticated
// session: with the engine's own command-line client on the Sandbox's network,
// the URL as published (its host resolved by Docker's DNS), and with the Go
// driver from the test process (its host swapped for the container's address,
// which is all this process can resolve).
func urlsWork(t *testing.T, ns, name string, conventional bool) {
	t.Helper()
	secret := secretData(t, ns, name+"-sandbox")
	services := strings.Fields(kubectl(t, "get", "sandbox", name, "-n", ns, "-o",
		`jsonpath={range .status.services[*]}{.engine}={.containerName}{" "}{end}`))
	for _, s := range services {
		engine, container, _ := strings.Cut(s, "=")
		keys, _ := sandboxv1.KeysOf(sandboxv1.Engine(engine))
		raw := secret[keys.URL]
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() != secret[keys.Host] || u.Port() != secret[keys.Port] {
			t.Errorf("%s: %s=%q does not name %s:%s", engine, keys.URL, raw, secret[keys.Host], secret[keys.Port])
			continue
		}
		if got, ok := secret[keys.ConventionalURL]; ok != conventional || (ok && got != raw) {
			t.Errorf("%s: %s=%q (published %v), want %v and equal to %s", engine, keys.ConventionalURL, got, ok, conventional, keys.URL)
		}
		if out, ok := cliLogin(t, engine, raw); !ok {
			t.Errorf("%s's own client refused %s: %s", engine, keys.URL, out)
		}
		u.Host = net.JoinHostPort(containerIP(t, container), u.Port())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = testclients.ConnectURL(ctx, engine, u.String())
		cancel()
		if err != nil {
			t.Errorf("%s's Go driver refused %s: %v", engine, keys.URL, err)
		}
	}
}

// cliLogin runs engine's command-line client, from a client container on the
// e2e network, with nothing but the URL (in its environment), and says whether
// it logged in and ran a command.
func cliLogin(t *testing.T, engine, rawURL string) (string, bool) {
	t.Helper()
	cmd := map[string]struct{ script, want string }{
		"postgres": {`psql "$URL" -X -tA -c 'SELECT 1'`, "1"},
		"redis":    {`redis-cli --no-auth-warning -u "$URL" PING`, "PONG"},
		"mongo":    {`mongosh "$URL" --quiet --eval 'db.runCommand({ping: 1}).ok'`, "1"},
	}[engine]
	b, _ := exec.Command("docker", "exec", "-e", "URL="+rawURL, clientContainer(t, engine), "sh", "-c", cmd.script).CombinedOutput()
	out := strings.TrimSpace(string(b))
	return out, out == cmd.want
}
