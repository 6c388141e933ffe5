package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// invData: what an agent wrote stays, unless the cycle's fault explains losing
// it (its container replaced, the daemon restarted: data lives on tmpfs). The
// suite writes a marker into each live Sandbox's redis and reads it back at
// every check, through the Secret's password.
const invData = "a live Sandbox keeps its data"

const markerKey = "chaos-marker"

// checkData reads each redis service's marker back, and writes it where it is
// new (a new container) or where the fault explains its loss.
func (r *run) checkData(ctx context.Context, c *cycle, cs []container) {
	for _, rec := range r.w.records() {
		id := rec.containers["redis"]
		if id == "" || !running(cs, id) {
			continue
		}
		pw, err := r.passwords(ctx, rec)
		keys, _ := sandboxv1.KeysOf(sandboxv1.EngineRedis)
		if err != nil || pw[keys.Password] == "" {
			continue
		}
		want := string(rec.uid)
		got, err := r.redis(ctx, id, pw[keys.Password], "GET", markerKey)
		switch {
		case err != nil:
			continue // not answering now: Ready is the check's to judge
		case got == want:
			continue
		case rec.marked == id && !c.cause.explains(string(rec.uid), "redis"):
			r.violate(invData, fmt.Sprintf("%s's redis %s lost its data (GET %s = %q, want %q); the fault explains no loss",
				rec.name, short(id), markerKey, got, want))
		}
		if _, err := r.redis(ctx, id, pw[keys.Password], "SET", markerKey, want); err == nil {
			rec.marked = id
		}
	}
}

// redis runs one redis-cli command in a container, authenticated through the
// environment (never argv), and returns its output.
func (r *run) redis(ctx context.Context, id, password string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := r.h.daemon.Docker(cctx, append([]string{"exec", "-e", "REDISCLI_AUTH=" + password, id, "redis-cli", "--no-auth-warning"}, args...)...)
	out = strings.TrimSpace(out)
	if err == nil && (strings.HasPrefix(out, "(error)") || strings.HasPrefix(out, "NOAUTH") || strings.HasPrefix(out, "WRONGPASS")) {
		return "", fmt.Errorf("redis-cli %s: %s", args[0], out)
	}
	return out, err
}

func running(cs []container, id string) bool {
	for _, c := range cs {
		if c.id == id {
			return c.state == "running"
		}
	}
	return false
}
