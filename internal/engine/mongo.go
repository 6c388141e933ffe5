package engine

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

const (
	mongoUser   = "sandbox"
	mongoAuthDB = "admin"
)

type mongo struct{}

func (mongo) Name() string { return "mongo" }
func (mongo) Slug() string { return "mongo" }

// Images: there is no mongo:8-alpine (upstream shipped that tag and learned it the
// hard way) and no kitchen-sink image, since mongo has no features.
func (mongo) Images() Images { return Images{Default: "mongo:8"} }
func (mongo) Port() int      { return 27017 }

// Tmpfs covers both of the image's VOLUMEs, so no anonymous volume is created.
func (mongo) Tmpfs() map[string]string {
	return map[string]string{"/data/db": "", "/data/configdb": ""}
}
func (mongo) Features() []string { return nil }

// mongoPasswordFile holds the password; MONGO_INITDB_ROOT_PASSWORD_FILE points the entrypoint at it.
const mongoPasswordFile = SecretsDir + "mongo-password"

func (m mongo) Container(password string, _ []string) Container {
	return Container{
		Env:     map[string]string{"MONGO_INITDB_ROOT_USERNAME": mongoUser, "MONGO_INITDB_ROOT_PASSWORD_FILE": mongoPasswordFile},
		Tmpfs:   m.Tmpfs(),
		Secrets: map[string]string{mongoPasswordFile: password},
		CapAdd:  slices.Clone(dropToUserCaps),
	}
}

// Probe authenticates and pings over TCP on the container's own address. Note: the
// image's init phase runs a temporary mongod bound to 127.0.0.1 only, so this cannot
// pass before the real server runs. A bash connect to the port comes first because
// each mongosh run boots Node.js (seconds of CPU): while the port is closed the probe
// fails in milliseconds instead of starving the services starting beside it. The
// URI, password included, reaches mongosh through the exec's environment, never its argv.
func (m mongo) Probe(password, addr string) Step {
	return Step{
		Argv: []string{"bash", "-c", `exec 3<>"/dev/tcp/$1/$2" && exec mongosh --nodb --quiet --eval ` +
			`'print(connect(process.env.SANDBOX_PROBE_URI).adminCommand({ping: 1}).ok)'`,
			"probe", addr, strconv.Itoa(m.Port())},
		Env:     map[string]string{"SANDBOX_PROBE_URI": m.uri(password, addr)},
		Timeout: 10 * time.Second,
		Expect:  "1",
	}
}
func (mongo) ProbeDeadline() time.Duration { return 60 * time.Second }

func (m mongo) ActivateFeatures(_, _ string, features []string) ([]Step, error) {
	return nil, CheckFeatures(m, features)
}

// VerifyFeatures has nothing to list: mongo has no features.
func (mongo) VerifyFeatures(string, string) (Step, func(string) []string) {
	return Step{}, func(string) []string { return nil }
}

func (m mongo) Publish(host, password string) map[string]string {
	return map[string]string{
		sandboxv1.MongoHostKey:     host,
		sandboxv1.MongoPortKey:     strconv.Itoa(m.Port()),
		sandboxv1.MongoUserKey:     mongoUser,
		sandboxv1.MongoPasswordKey: password,
		sandboxv1.MongoAuthDBKey:   mongoAuthDB,
		sandboxv1.MongoURLKey:      connectionURL("mongodb", mongoUser, password, host, m.Port(), "/", "authSource="+url.QueryEscape(mongoAuthDB)),
	}
}
func (mongo) PasswordKey() string { return sandboxv1.MongoPasswordKey }

// mongoRotateJS logs in with the old password, else the new one (a repeat),
// runs updateUser (FerretDB has it too, with the same SCRAM mechanisms), and
// proves a fresh login with the new password. Passwords come from the environment;
// the script sits in single quotes in sh, so it has none. It is one function call,
// so mongosh prints no completion value.
const mongoRotateJS = `(() => {
const env = process.env, host = env.ADDR.includes(":") ? "[" + env.ADDR + "]" : env.ADDR;
const login = (pw) => connect("mongodb://` + mongoUser + `:" + encodeURIComponent(pw) + "@" + host + ":" + env.PORT +
	"/` + mongoAuthDB + `?directConnection=true&serverSelectionTimeoutMS=3000");
let c;
try { c = login(env.OLD_PASSWORD || "-"); } catch (e) { c = login(env.NEW_PASSWORD); }
const r = c.adminCommand({updateUser: "` + mongoUser + `", pwd: env.NEW_PASSWORD});
if (!r.ok) { throw new Error("updateUser: " + JSON.stringify(r)); }
if (login(env.NEW_PASSWORD).adminCommand({ping: 1}).ok !== 1) { throw new Error("a login with the new password failed"); }
})()`

// Rotate: see Engine. Note: each mongosh run boots Node.js, seconds of CPU on a
// busy host, hence the longer timeout.
func (m mongo) Rotate(addr string) Step {
	return rotateStep(m, "\tmongosh --nodb --quiet --eval '"+mongoRotateJS+"'", addr, nil, 30*time.Second)
}

func (m mongo) uri(password, addr string) string {
	u := url.URL{
		Scheme:   "mongodb",
		User:     url.UserPassword(mongoUser, password),
		Host:     net.JoinHostPort(addr, strconv.Itoa(m.Port())),
		Path:     "/" + mongoAuthDB,
		RawQuery: "serverSelectionTimeoutMS=3000&directConnection=true",
	}
	return u.String()
}

// Init runs a .js script with mongosh, logged in as the published user (db is
// its authentication database; a script picks its own with db.getSiblingDB);
// an uncaught error ends it non-zero. The URI reaches mongosh through the
// environment, never its argv.
func (m mongo) Init(password, addr string) InitRunner {
	return InitRunner{Suffix: ".js",
		RunOne: `SANDBOX_INIT_FILE="$1" exec mongosh --nodb --quiet --eval 'db = connect(process.env.SANDBOX_INIT_URI); load(process.env.SANDBOX_INIT_FILE)' >/dev/null`,
		Env:    map[string]string{"SANDBOX_INIT_URI": m.uri(password, addr)}}
}
