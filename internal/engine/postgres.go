package engine

import (
	"strconv"
	"strings"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

const (
	postgresUser = "sandbox"
	postgresDB   = "sandbox"
)

// postgresExtensions maps each allowed feature to its extension name. Statements are
// built only from these values, never from the request.
var postgresExtensions = map[string]string{
	"vector":    "vector",
	"postgis":   "postgis",
	"pg_trgm":   "pg_trgm",
	"citext":    "citext",
	"uuid-ossp": "uuid-ossp",
}

type postgres struct{}

func (postgres) Name() string { return "postgres" }
func (postgres) Slug() string { return "pg" }
func (postgres) Images() Images {
	// The kitchen-sink image is upstream's local build: pgvector plus PostGIS.
	return Images{Default: "postgres:16-alpine", KitchenSink: "roboco-sandbox-pg:latest"}
}
func (postgres) Port() int { return 5432 }
func (postgres) Tmpfs() map[string]string {
	return map[string]string{"/var/lib/postgresql/data": ""}
}
func (postgres) Features() []string {
	return []string{"vector", "postgis", "pg_trgm", "citext", "uuid-ossp"}
}

// postgresPasswordFile holds the password; POSTGRES_PASSWORD_FILE points the entrypoint at it.
const postgresPasswordFile = SecretsDir + "postgres-password"

// Container: FOWNER besides the usual, since the entrypoint chmods the data
// directory it has just given to postgres (found by test on the real engine).
func (p postgres) Container(password string, _ []string) Container {
	return Container{
		Env:     map[string]string{"POSTGRES_USER": postgresUser, "POSTGRES_PASSWORD_FILE": postgresPasswordFile, "POSTGRES_DB": postgresDB},
		Tmpfs:   p.Tmpfs(),
		Secrets: map[string]string{postgresPasswordFile: password},
		CapAdd:  []string{"CHOWN", "FOWNER", "SETGID", "SETUID"},
	}
}

// Probe logs in over TCP on the container's own address with the published
// credentials. Note: the image's init phase runs a temporary server on the unix socket
// only (listen_addresses=”), so a TCP login cannot pass until the real server runs; a
// socket probe (plain pg_isready) would hand out an endpoint that is about to restart.
func (p postgres) Probe(password, addr string) Step {
	return p.psql(password, addr, "SELECT 1", "1")
}
func (postgres) ProbeDeadline() time.Duration { return 60 * time.Second }

func (p postgres) ActivateFeatures(password, addr string, features []string) ([]Step, error) {
	if err := CheckFeatures(p, features); err != nil {
		return nil, err
	}
	if len(features) == 0 {
		return nil, nil
	}
	var sql strings.Builder
	for _, f := range features {
		sql.WriteString(`CREATE EXTENSION IF NOT EXISTS "` + postgresExtensions[f] + `";`)
	}
	return []Step{p.psql(password, addr, sql.String(), "")}, nil
}

func (p postgres) VerifyFeatures(password, addr string) (Step, func(string) []string) {
	return p.psql(password, addr, "SELECT extname FROM pg_extension", ""), func(stdout string) []string {
		installed := lines(stdout)
		var active []string
		for _, f := range p.Features() {
			for _, ext := range installed {
				if ext == postgresExtensions[f] {
					active = append(active, f)
				}
			}
		}
		return active
	}
}

func (p postgres) Publish(host, password string) map[string]string {
	return map[string]string{
		sandboxv1.PostgresHostKey:     host,
		sandboxv1.PostgresPortKey:     strconv.Itoa(p.Port()),
		sandboxv1.PostgresUserKey:     postgresUser,
		sandboxv1.PostgresPasswordKey: password,
		sandboxv1.PostgresDatabaseKey: postgresDB,
		sandboxv1.PostgresURLKey:      connectionURL("postgresql", postgresUser, password, host, p.Port(), "/"+postgresDB, "sslmode=disable"),
	}
}
func (postgres) PasswordKey() string { return sandboxv1.PostgresPasswordKey }

// postgresRotate sets the password over the unix socket, which the image's
// pg_hba trusts (initdb --auth-local=trust, in the official image too), so it works
// whichever password the role has now, and in the same psql proves it with a TCP
// login (\connect, PGPASSWORD the new one): one client process on the claim's path.
// Where the socket is refused it logs in over TCP with the old password, then the
// new one (a repeat), and proves it apart. The literal is escaped by doubling
// quotes (standard_conforming_strings is on by default). Note: a failed statement
// is logged with its text by default; the SETs keep it out of the log.
const postgresRotate = `	lit=$(printf '%s' "$NEW_PASSWORD" | sed "s/'/''/g")
	alter() {
		printf "SET log_min_error_statement = panic;\nSET log_statement = 'none';\nALTER ROLE \"` + postgresUser + `\" PASSWORD '%s';\n" "$lit"
	}
	login() {
		printf '\\connect -reuse-previous=off "host=%s port=%s user=` + postgresUser + ` dbname=` + postgresDB + `"\nSELECT 1;\n' "$ADDR" "$PORT"
	}
	psql_() { psql -X -q -w -tA -v ON_ERROR_STOP=1 -p "$PORT" -U ` + postgresUser + ` -d ` + postgresDB + ` "$@"; }
	[ "$({ alter; login; } | PGPASSWORD=$NEW_PASSWORD psql_ 2>/dev/null)" = 1 ] && exit_ok=1 || exit_ok=
	if [ -z "$exit_ok" ]; then
		alter | PGPASSWORD=$OLD_PASSWORD psql_ -h "$ADDR" || alter | PGPASSWORD=$NEW_PASSWORD psql_ -h "$ADDR" ||
			{ echo "ALTER ROLE failed over the socket and with the old and the new password" >&2; exit 1; }
		[ "$(login | PGPASSWORD=$NEW_PASSWORD psql_ -h "$ADDR")" = 1 ] ||
			{ echo "a login with the new password failed" >&2; exit 1; }
	fi`

// Rotate: see Engine.
func (p postgres) Rotate(addr string) Step {
	return rotateStep(p, postgresRotate, addr, map[string]string{"PGCONNECT_TIMEOUT": "3"}, 20*time.Second)
}

// psql runs one statement as the sandbox user; the password travels in PGPASSWORD.
func (p postgres) psql(password, addr, sql, expect string) Step {
	return Step{
		Argv: []string{"psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1",
			"-h", addr, "-p", strconv.Itoa(p.Port()), "-U", postgresUser, "-d", postgresDB, "-c", sql},
		Env:        map[string]string{"PGPASSWORD": password},
		ConnectEnv: "PGCONNECT_TIMEOUT",
		Expect:     expect,
	}.Within(10 * time.Second)
}

// Init runs a .sql script with psql as the published user in its database,
// stopping at its first error (ON_ERROR_STOP).
func (postgres) Init(password, _ string) InitRunner {
	return InitRunner{Suffix: ".sql",
		RunOne: `psql -X -q -v ON_ERROR_STOP=1 -h "$ADDR" -p "$PORT" -U ` + postgresUser + ` -d ` + postgresDB + ` -f "$1" >/dev/null`,
		Env:    map[string]string{"PGPASSWORD": password, "PGCONNECT_TIMEOUT": "5"}}
}
