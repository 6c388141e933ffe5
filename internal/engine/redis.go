package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// redisModule is where a feature's module lives in the kitchen-sink image and the
// names MODULE LIST may report for it.
type redisModule struct {
	path  string
	names []string
}

var redisModules = map[string]redisModule{
	// RediSearch 2 (redis-stack) reports "search"; RediSearch 1 (Debian's) "ft".
	"search": {"/opt/redis-stack/lib/redisearch.so", []string{"search", "ft"}},
	"json":   {"/opt/redis-stack/lib/rejson.so", []string{"ReJSON"}},
	"bloom":  {"/opt/redis-stack/lib/redisbloom.so", []string{"bf"}},
}

type redis struct{}

func (redis) Name() string { return "redis" }
func (redis) Slug() string { return "redis" }
func (redis) Images() Images {
	return Images{Default: "redis:8-alpine", KitchenSink: "redis/redis-stack-server:latest"}
}
func (redis) Port() int { return 6379 }

// Tmpfs covers /data, the image's VOLUME: no anonymous volume is created at all.
func (redis) Tmpfs() map[string]string     { return map[string]string{"/data": ""} }
func (redis) Features() []string           { return []string{"search", "json", "bloom"} }
func (redis) ProbeDeadline() time.Duration { return 15 * time.Second }
func (redis) PasswordKey() string          { return sandboxv1.RedisPasswordKey }

// redisLocalOnly lets local connections (the controller's execs, see Data)
// use DEBUG RELOAD and set dbfilename; clients on the network cannot.
const redisLocalOnly = "enable-debug-command local\nenable-protected-configs local\n"

// redisConfig holds requirepass; a first argument ending in .conf is how the
// upstream image takes a configuration file.
const redisConfig = SecretsDir + "redis.conf"

// Container starts redis-server with a configuration file holding the password
// (no --requirepass on its command line). Note: modules are loaded at start with
// --loadmodule, so the MODULE LOAD command stays disabled and an agent holding the
// password cannot load arbitrary code.
func (r redis) Container(password string, features []string) Container {
	cmd := []string{"redis-server", redisConfig}
	for _, f := range features {
		if m, ok := redisModules[f]; ok {
			cmd = append(cmd, "--loadmodule", m.path)
		}
	}
	return Container{
		Cmd:     cmd,
		Tmpfs:   r.Tmpfs(),
		Secrets: map[string]string{redisConfig: "requirepass " + redisConfigValue(password) + "\n" + redisLocalOnly},
		CapAdd:  slices.Clone(dropToUserCaps),
	}
}

// redisConfigValue is password as one argument of a redis.conf line: as it is
// unless it holds a blank, a quote or a control character (which split or quote
// an argument), else double-quoted with \\, \" and \xHH escapes.
func redisConfigValue(password string) string {
	if password != "" && !strings.ContainsFunc(password, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\''
	}) {
		return password
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(password) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Probe pings over TCP on the container's address; the password travels in
// REDISCLI_AUTH, and only PONG counts (redis-cli may exit 0 on an error reply).
func (r redis) Probe(password, addr string) Step {
	return r.cli(password, addr, "PONG", "PING")
}

// ActivateFeatures has nothing to run: Command loaded the modules at start.
func (r redis) ActivateFeatures(_, _ string, features []string) ([]Step, error) {
	return nil, CheckFeatures(r, features)
}

func (r redis) VerifyFeatures(password, addr string) (Step, func(string) []string) {
	return r.cli(password, addr, "", "MODULE", "LIST"), func(stdout string) []string {
		loaded := map[string]bool{}
		out := lines(stdout)
		for i := 0; i+1 < len(out); i++ {
			if out[i] == "name" {
				loaded[out[i+1]] = true
			}
		}
		var active []string
		for _, f := range r.Features() {
			if slices.ContainsFunc(redisModules[f].names, func(n string) bool { return loaded[n] }) {
				active = append(active, f)
			}
		}
		return active
	}
}

// redisUser names, in the URL, the user requirepass gives the password to. The
// user-less form (redis://:pw@host) is refused by redis-cli 7.0 (it sends AUTH
// with an empty user name: WRONGPASS); every client reads this one.
const redisUser = "default"

func (r redis) Publish(host, password string) map[string]string {
	return map[string]string{
		sandboxv1.RedisHostKey:     host,
		sandboxv1.RedisPortKey:     strconv.Itoa(r.Port()),
		sandboxv1.RedisPasswordKey: password,
		sandboxv1.RedisURLKey:      connectionURL("redis", redisUser, password, host, r.Port(), "/0", ""),
	}
}

// redisRotate: CONFIG SET requirepass (which also gives the ACL user "default"
// this one password and no other), authenticated with the old password, else with
// the new one (a repeat). The value reaches redis-cli on stdin (-x), not in argv.
// Only an OK counts: redis-cli may exit 0 on an error reply. Note: CONFIG REWRITE
// is not used; the server cannot write its root-owned file, the framework does.
const redisRotate = `	set_pass() {
		printf '%s' "$NEW_PASSWORD" |
			REDISCLI_AUTH=$1 redis-cli --no-auth-warning -h "$ADDR" -p "$PORT" -x CONFIG SET requirepass 2>/dev/null
	}
	[ "$(set_pass "${OLD_PASSWORD:-}")" = OK ] || [ "$(set_pass "$NEW_PASSWORD")" = OK ] ||
		{ echo "CONFIG SET requirepass refused with the old and the new password" >&2; exit 1; }
	[ "$(REDISCLI_AUTH=$NEW_PASSWORD redis-cli --no-auth-warning -h "$ADDR" -p "$PORT" PING)" = PONG ] ||
		{ echo "a login with the new password failed" >&2; exit 1; }`

// Rotate: see Engine.
func (r redis) Rotate(addr string) Step {
	return rotateStep(r, redisRotate, addr, nil, 10*time.Second)
}

func (r redis) cli(password, addr, expect string, args ...string) Step {
	return Step{
		Argv:    append([]string{"redis-cli", "--no-auth-warning", "-h", addr, "-p", strconv.Itoa(r.Port())}, args...),
		Env:     map[string]string{"REDISCLI_AUTH": password},
		Timeout: 5 * time.Second,
		Expect:  expect,
	}
}

// Init runs a .redis script one command per line (blank lines and # comments
// skipped) through redis-cli, which parses the line's quoting, and stops at
// the first error reply: redis-cli exits 0 on one, so its (error) prefix is
// what counts (--no-raw quotes a value that looks like one).
func (redis) Init(password, _ string) InitRunner {
	return InitRunner{Suffix: ".redis", RunOne: `n=0
while IFS= read -r line || [ -n "$line" ]; do
	n=$((n+1))
	case "$line" in ""|"#"*) continue ;; esac
	out=$(printf '%s\n' "$line" | redis-cli --no-auth-warning --no-raw -h "$ADDR" -p "$PORT" 2>&1) || { echo "line $n: error: $out"; exit 1; }
	case "$out" in "(error)"*) echo "line $n: $out"; exit 1 ;; esac
done < "$1"`,
		Env: map[string]string{"REDISCLI_AUTH": password}}
}
