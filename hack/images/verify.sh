#!/usr/bin/env bash
# Checks the images of hack/images.sh by hand-style use with real clients: each
# engine runs the way the controller runs it (tmpfs data dir, --memory 512m,
# --cpus 1, no-new-privileges, --pids-limit 256, no published ports) on a
# user-defined network, and clients in other containers on that network connect
# by name. Also proves the init trap of postgres and mongo (a temporary server
# that only the socket / loopback can reach) and measures the time from
# `docker run` to the first successful authenticated connection.
#
#   hack/images/verify.sh [postgres|postgres-kitchen|redis|redis-kitchen|mongo]...
#
# Needs the images (hack/images.sh) and Go (builds a small mongo-driver client in
# a temporary directory). Removes every container and network it started.
set -Eeuo pipefail
shopt -s inherit_errexit

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
eval "$("$ROOT/hack/images.sh" --print)"
RUN_ID="imgcheck-$$"
NET="sbx-$RUN_ID"
CHECK_LABEL="sandbox.roboco.io/image-check=$RUN_ID"
LIMITS=(--memory 512m --cpus 1 --security-opt no-new-privileges --pids-limit 256 --label "$CHECK_LABEL")
TMP="$(mktemp -d)"
PASS=0 FAIL=0
declare -a TIMINGS=()

cleanup() {
	local ids
	ids="$(docker ps -aq --filter "label=$CHECK_LABEL")"
	[ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
	docker network rm "$NET" >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT

ok() { PASS=$((PASS + 1)); echo "  PASS $*"; }
bad() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }
expect() { # expect DESCRIPTION CMD...: CMD must succeed
	local d="$1"; shift
	if out="$("$@" 2>&1)"; then ok "$d"; else bad "$d: $(tail -3 <<<"$out")"; fi
}
refuse() { # refuse DESCRIPTION CMD...: CMD must fail
	local d="$1"; shift
	if out="$("$@" 2>&1)"; then bad "$d (it succeeded: $(tail -2 <<<"$out"))"; else ok "$d"; fi
}
pw() { head -c 24 /dev/urandom | base64 | tr -d '/+=' | cut -c1-24; }
now() { date +%s.%N; }
ip_of() { docker inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" "$1"; }
wait_log() { # wait_log CONTAINER PATTERN SECONDS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		# Note: not `docker logs | grep -q`: with pipefail, grep's early exit fails the pipe.
		grep -q -- "$2" <<<"$(docker logs "$1" 2>&1)" && return 0
		sleep 0.1
	done
	return 1
}
# poll_since T0 SECONDS CMD...: runs CMD until it succeeds; prints seconds since T0.
poll_since() {
	local t0="$1" limit="$2" deadline; shift 2
	deadline=$(($(date +%s) + limit))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}
common_checks() { # common_checks CONTAINER IMAGE USER VOLUME...
	local c="$1" img="$2" user="$3"; shift 3
	local uid vols v
	uid="$(docker exec "$c" awk '/^Uid:/ { print $2 }' /proc/1/status)"
	[ "$uid" = "$(docker exec "$c" id -u "$user")" ] && ok "PID 1 runs as $user" || bad "PID 1 runs as uid $uid, not $user"
	vols="$(docker image inspect -f '{{range $k, $v := .Config.Volumes}}{{$k}} {{end}}' "$img")"
	for v in "$@"; do
		grep -qw -- "$v" <<<"$vols" && ok "VOLUME $v declared" || bad "VOLUME $v not declared (have: $vols)"
	done
	[ "$(docker image inspect -f '{{index .Config.Labels "sandbox.roboco.io/test-image"}}' "$img")" = 1 ] \
		&& ok "label sandbox.roboco.io/test-image=1" || bad "label sandbox.roboco.io/test-image missing"
	[ -z "$(docker inspect -f '{{range $p, $b := .NetworkSettings.Ports}}{{if $b}}{{$p}}{{end}}{{end}}' "$c")" ] \
		&& ok "no published ports" || bad "ports are published"
}

docker network create --label "$CHECK_LABEL" "$NET" >/dev/null

# A long-lived client container per image family, on the same network.
client() { # client NAME IMAGE
	docker run -d --name "$1" --network "$NET" --label "$CHECK_LABEL" --entrypoint sleep "$2" infinity >/dev/null
}

# ------------------------------------------------------------------ postgres
check_postgres() {
	local img="$1" kitchen="${2:-}" c="pg-$RUN_ID${kitchen:+-k}" cl="pgcl-$RUN_ID${kitchen:+-k}" p t0 t ip
	echo "== $img"
	p="$(pw)"
	client "$cl" "$img"
	t0="$(now)"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /var/lib/postgresql/data \
		-e POSTGRES_USER=agent -e POSTGRES_PASSWORD="$p" -e POSTGRES_DB=appdb "$img" >/dev/null
	if t="$(poll_since "$t0" 60 docker exec -e PGPASSWORD="$p" "$cl" psql -h "$c" -U agent -d appdb -Atqc 'select 1')"; then
		ok "first authenticated TCP query from another container ${t}s after docker run"
		TIMINGS+=("$(basename "$img"): ${t}s")
	else
		bad "no TCP connection within 60s"; docker logs "$c" 2>&1 | tail -20; return
	fi
	expect "psql over TCP as POSTGRES_USER into POSTGRES_DB" \
		docker exec -e PGPASSWORD="$p" "$cl" psql -h "$c" -U agent -d appdb -Atqc 'select current_user, current_database()'
	refuse "wrong password is rejected (scram-sha-256)" \
		docker exec -e PGPASSWORD="wrong$p" "$cl" psql -h "$c" -U agent -d appdb -Atqc 'select 1'
	expect "password_encryption is scram-sha-256" bash -c "[ \"\$(docker exec -e PGPASSWORD='$p' '$cl' psql -h '$c' -U agent -d appdb -Atqc 'show password_encryption')\" = scram-sha-256 ]"
	expect "pg_isready and psql on PATH in the container" docker exec "$c" sh -c 'command -v pg_isready && command -v psql && pg_isready -U agent -d appdb'
	common_checks "$c" "$img" postgres /var/lib/postgresql/data
	if [ -n "$kitchen" ]; then
		expect "CREATE EXTENSION vector, postgis, pg_trgm, citext, uuid-ossp" \
			docker exec -e PGPASSWORD="$p" "$cl" psql -v ON_ERROR_STOP=1 -h "$c" -U agent -d appdb -Atqc \
			'CREATE EXTENSION vector; CREATE EXTENSION postgis; CREATE EXTENSION pg_trgm; CREATE EXTENSION citext; CREATE EXTENSION "uuid-ossp";'
		expect "vector distance and an HNSW index" \
			docker exec -e PGPASSWORD="$p" "$cl" psql -v ON_ERROR_STOP=1 -h "$c" -U agent -d appdb -Atqc \
			"CREATE TABLE items (id int, e vector(3)); INSERT INTO items VALUES (1,'[1,2,3]'),(2,'[3,2,1]'); CREATE INDEX ON items USING hnsw (e vector_l2_ops); SELECT id FROM items ORDER BY e <-> '[1,2,4]' LIMIT 1;"
		expect "PostGIS geography distance" \
			docker exec -e PGPASSWORD="$p" "$cl" psql -v ON_ERROR_STOP=1 -h "$c" -U agent -d appdb -Atqc \
			"SELECT round(ST_Distance('SRID=4326;POINT(13.4 52.5)'::geography, 'SRID=4326;POINT(2.35 48.86)'::geography)/1000), postgis_lib_version()"
		expect "pg_trgm similarity, citext, uuid_generate_v4" \
			docker exec -e PGPASSWORD="$p" "$cl" psql -v ON_ERROR_STOP=1 -h "$c" -U agent -d appdb -Atqc \
			"SELECT similarity('sandbox','sandbag') > 0, 'A'::citext = 'a'::citext, uuid_generate_v4() IS NOT NULL"
		docker exec -e PGPASSWORD="$p" "$cl" psql -h "$c" -U agent -d appdb -Atqc \
			"SELECT extname || ' ' || extversion FROM pg_extension ORDER BY 1" | sed 's/^/       /'
	fi
	docker rm -f -v "$c" >/dev/null

	# The trap: during the temporary phase the socket answers and TCP does not.
	c="pgtrap-$RUN_ID${kitchen:+-k}"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /var/lib/postgresql/data \
		-e POSTGRES_PASSWORD="$p" -e SANDBOX_TEST_INIT_DELAY=6 "$img" >/dev/null
	if wait_log "$c" 'keeping the temporary server up' 30; then
		ip="$(ip_of "$c")"
		expect "temporary phase: pg_isready on the unix socket succeeds" docker exec "$c" pg_isready
		refuse "temporary phase: pg_isready -h 127.0.0.1 fails" docker exec "$c" pg_isready -h 127.0.0.1 -t 2
		refuse "temporary phase: pg_isready -h <container IP> fails" docker exec "$c" pg_isready -h "$ip" -t 2
		refuse "temporary phase: psql from another container fails" docker exec -e PGPASSWORD="$p" "$cl" psql -h "$c" -U postgres -Atqc 'select 1'
		grep -q 'init process complete' <<<"$(docker logs "$c" 2>&1)" \
			&& bad "the temporary phase ended before its checks did; the results above may be wrong"
		if wait_log "$c" 'init process complete' 30 && t="$(poll_since "$(now)" 30 docker exec "$c" pg_isready -h "$ip")"; then
			ok "after the temporary phase: pg_isready -h <container IP> succeeds"
		else
			bad "server never answered on TCP after the temporary phase"
		fi
		expect "docker logs show the server starting twice (temporary + real)" bash -c \
			"[ \"\$(docker logs '$c' 2>&1 | grep -c 'database system is ready to accept connections')\" = 2 ]"
	else
		bad "temporary phase not observed"; docker logs "$c" 2>&1 | tail -20
	fi
	docker rm -f -v "$c" >/dev/null

	c="pgnopw-$RUN_ID${kitchen:+-k}"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /var/lib/postgresql/data "$img" >/dev/null
	if [ "$(docker wait "$c")" != 0 ] && grep -q 'superuser password is not specified' <<<"$(docker logs "$c" 2>&1)"; then
		ok "without POSTGRES_PASSWORD the container exits non-zero with the official message"
	else
		bad "without POSTGRES_PASSWORD the container did not refuse to start"
	fi
	docker rm -f -v "$c" "$cl" >/dev/null
}

# ------------------------------------------------------------------ redis
check_redis() {
	local img="$1" kitchen="${2:-}" c="redis-$RUN_ID${kitchen:+-k}" cl="rcl-$RUN_ID${kitchen:+-k}" p t0 t
	echo "== $img"
	p="$(pw)"
	client "$cl" "$img"
	t0="$(now)"
	# The kitchen's module is loaded the way the controller does it: --loadmodule at start.
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /data "$img" redis-server --requirepass "$p" \
		${kitchen:+--loadmodule /opt/redis-stack/lib/redisearch.so} >/dev/null
	if t="$(poll_since "$t0" 15 bash -c "[ \"\$(docker exec -e REDISCLI_AUTH='$p' '$cl' redis-cli -h '$c' ping)\" = PONG ]")"; then
		ok "first authenticated PING from another container ${t}s after docker run"
		TIMINGS+=("$(basename "$img"): ${t}s")
	else
		bad "no PONG within 15s"; docker logs "$c" 2>&1 | tail -20; return
	fi
	expect "SET/GET with -a from another container" bash -c \
		"docker exec '$cl' redis-cli --no-auth-warning -a '$p' -h '$c' set k v >/dev/null && [ \"\$(docker exec '$cl' redis-cli --no-auth-warning -a '$p' -h '$c' get k)\" = v ]"
	expect "no password: NOAUTH" bash -c "docker exec '$cl' redis-cli -h '$c' get k | grep -q NOAUTH"
	expect "wrong password: rejected" bash -c "docker exec '$cl' redis-cli --no-auth-warning -a 'wrong$p' -h '$c' ping 2>&1 | grep -qiE 'WRONGPASS|invalid'"
	expect "REDISCLI_AUTH inside the container" bash -c "[ \"\$(docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli ping)\" = PONG ]"
	expect "protected-mode no, working dir /data" bash -c \
		"docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli config get protected-mode | grep -qx no && docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli config get dir | grep -qx /data"
	common_checks "$c" "$img" redis /data
	if [ -n "$kitchen" ]; then
		expect "MODULE LIST shows RediSearch (ft)" bash -c "docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli module list | grep -qx ft"
		expect "FT.CREATE / FT.ADD / FT.SEARCH (RediSearch 1.2 syntax)" bash -c "
			docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli FT.CREATE idx SCHEMA title TEXT body TEXT >/dev/null &&
			docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli FT.ADD idx doc1 1.0 FIELDS title 'hello sandbox' body 'x' >/dev/null &&
			[ \"\$(docker exec -e REDISCLI_AUTH='$p' '$c' redis-cli FT.SEARCH idx sandbox NOCONTENT | head -1)\" = 1 ]"
		expect "MODULE LOAD stays disabled (an agent cannot load code)" bash -c \
			"docker exec '$cl' redis-cli --no-auth-warning -a '$p' -h '$c' MODULE LOAD /usr/lib/redis/modules/redisearch.so | grep -q 'not allowed'"
	fi
	docker rm -f -v "$c" "$cl" >/dev/null
}

# ------------------------------------------------------------------ mongo
mongo_client() {
	local dir="$TMP/mongocheck"
	[ -x "$dir/mongocheck" ] && return 0
	mkdir -p "$dir"
	cat >"$dir/main.go" <<-'EOF'
	// mongocheck: the official Go driver against a mongo endpoint.
	//   mongocheck wait HOST:PORT USER PW   - ping until it succeeds (60 s)
	//   mongocheck once HOST:PORT USER PW   - one ping (3 s)
	//   mongocheck check HOST:PORT USER PW  - auth + CRUD checks, exit 1 on failure
	package main

	import (
		"context"
		"errors"
		"fmt"
		"net/url"
		"os"
		"time"

		"go.mongodb.org/mongo-driver/v2/bson"
		"go.mongodb.org/mongo-driver/v2/mongo"
		"go.mongodb.org/mongo-driver/v2/mongo/options"
	)

	func uri(hostport, user, pw, extra string) string {
		if user == "" {
			return "mongodb://" + hostport + "/?serverSelectionTimeoutMS=3000" + extra
		}
		return fmt.Sprintf("mongodb://%s:%s@%s/?authSource=admin&serverSelectionTimeoutMS=3000%s",
			url.QueryEscape(user), url.QueryEscape(pw), hostport, extra)
	}

	func ping(ctx context.Context, u string) error {
		c, err := mongo.Connect(options.Client().ApplyURI(u))
		if err != nil {
			return err
		}
		defer c.Disconnect(ctx)
		return c.Ping(ctx, nil)
	}

	func main() {
		mode, hp, user, pw := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if mode == "once" {
			if err := ping(ctx, uri(hp, user, pw, "&connectTimeoutMS=1000")); err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			return
		}
		if mode == "wait" {
			for ctx.Err() == nil {
				if ping(ctx, uri(hp, user, pw, "&connectTimeoutMS=500")) == nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			os.Exit(1)
		}
		failed := 0
		check := func(name string, good bool, detail any) {
			if good {
				fmt.Printf("  PASS go driver: %s\n", name)
				return
			}
			failed++
			fmt.Printf("  FAIL go driver: %s: %v\n", name, detail)
		}
		for _, mech := range []string{"", "SCRAM-SHA-256", "SCRAM-SHA-1"} {
			extra, label := "", "default mechanism"
			if mech != "" {
				extra, label = "&authMechanism="+mech, mech
			}
			c, err := mongo.Connect(options.Client().ApplyURI(uri(hp, user, pw, extra)))
			if err != nil {
				check("connect "+label, false, err)
				continue
			}
			err = c.Ping(ctx, nil)
			check("ping ("+label+")", err == nil, err)
			coll := c.Database("appdb").Collection("things")
			_, err = coll.InsertOne(ctx, bson.D{{Key: "mech", Value: label}, {Key: "n", Value: 42}})
			check("insertOne ("+label+")", err == nil, err)
			var got bson.M
			err = coll.FindOne(ctx, bson.D{{Key: "mech", Value: label}}).Decode(&got)
			check("findOne ("+label+")", err == nil && fmt.Sprint(got["n"]) == "42", fmt.Sprint(got, err))
			_ = c.Disconnect(ctx)
		}
		c, _ := mongo.Connect(options.Client().ApplyURI(uri(hp, user, pw, "")))
		coll := c.Database("appdb").Collection("things")
		n, err := coll.CountDocuments(ctx, bson.D{})
		check("countDocuments", err == nil && n == 3, fmt.Sprint(n, err))
		res, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		check("updateMany $inc", err == nil && res.ModifiedCount == 3, err)
		_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "mech", Value: 1}}})
		check("createIndex", err == nil, err)
		cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}}})
		var agg []bson.M
		if err == nil {
			err = cur.All(ctx, &agg)
		}
		check("aggregate $group $sum", err == nil && len(agg) == 1 && fmt.Sprint(agg[0]["s"]) == "129", fmt.Sprint(agg, err))
		dres, err := coll.DeleteMany(ctx, bson.D{})
		check("deleteMany", err == nil && dres.DeletedCount == 3, err)
		err = c.Database("appdb").Drop(ctx)
		check("dropDatabase", err == nil, err)
		_ = c.Disconnect(ctx)

		err = ping(ctx, uri(hp, user, "wrong"+pw, ""))
		check("wrong password rejected", err != nil, "ping succeeded")
		err = ping(ctx, uri(hp, "nobody", pw, ""))
		check("unknown user rejected", err != nil, "ping succeeded")
		anon, _ := mongo.Connect(options.Client().ApplyURI(uri(hp, "", "", "")))
		err = anon.Ping(ctx, nil)
		check("anonymous ping allowed (as with mongod)", err == nil, err)
		_, err = anon.Database("appdb").Collection("x").InsertOne(ctx, bson.D{{Key: "a", Value: 1}})
		check("anonymous insert rejected", err != nil, "insert succeeded")
		err = anon.Database("appdb").Collection("x").FindOne(ctx, bson.D{}).Err()
		check("anonymous find rejected", err != nil && !errors.Is(err, mongo.ErrNoDocuments), err)
		_, err = anon.ListDatabaseNames(ctx, bson.D{})
		check("anonymous listDatabases rejected", err != nil, "listDatabases succeeded")
		_ = anon.Disconnect(ctx)
		if failed > 0 {
			os.Exit(1)
		}
	}
	EOF
	(cd "$dir" && printf 'module mongocheck\n\ngo 1.24\n' >go.mod &&
		GOFLAGS= GOWORK=off go get go.mongodb.org/mongo-driver/v2@v2.10.0 >/dev/null 2>&1 &&
		GOFLAGS= GOWORK=off go mod tidy >/dev/null 2>&1 &&
		CGO_ENABLED=0 GOFLAGS= GOWORK=off go build -o mongocheck .) || { echo "building the mongo client failed" >&2; return 1; }
}

check_mongo() {
	local img="$1" c="mongo-$RUN_ID" cl="mcl-$RUN_ID" p t0 t ip
	echo "== $img"
	mongo_client
	p="$(pw)"
	docker run -d --name "$cl" --network "$NET" --label "$CHECK_LABEL" -v "$TMP/mongocheck/mongocheck:/usr/local/bin/mongocheck:ro" \
		--entrypoint sleep "$img" infinity >/dev/null
	t0="$(now)"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /data/db --tmpfs /data/configdb \
		-e MONGO_INITDB_ROOT_USERNAME=root -e MONGO_INITDB_ROOT_PASSWORD="$p" "$img" >/dev/null
	if t="$(poll_since "$t0" 60 docker exec "$cl" mongocheck wait "$c:27017" root "$p")"; then
		# Note: includes ~0.1 s of docker exec per poll.
		ok "first authenticated ping (Go driver) from another container ${t}s after docker run"
		TIMINGS+=("$(basename "$img"): ${t}s")
	else
		bad "no authenticated ping within 60s"; docker logs "$c" 2>&1 | tail -20; return
	fi
	if out="$(docker exec "$cl" mongocheck check "$c:27017" root "$p" 2>&1)"; then
		PASS=$((PASS + $(grep -c PASS <<<"$out"))); echo "$out"
	else
		PASS=$((PASS + $(grep -c PASS <<<"$out"))); FAIL=$((FAIL + $(grep -c FAIL <<<"$out"))); echo "$out"
	fi
	expect "official-style probe inside the container: mongosh --quiet --eval 'db.adminCommand({ping:1})'" \
		bash -c "docker exec '$c' mongosh --quiet --eval 'db.adminCommand({ping:1}).ok' | grep -qx 1"
	expect "mongosh with credentials inside the container" \
		bash -c "docker exec '$c' mongosh --quiet -u root -p '$p' --authenticationDatabase admin --eval 'db.getSiblingDB(\"x\").t.insertOne({a:1}).acknowledged' | grep -qx true"
	refuse "mongosh with a wrong password fails" \
		docker exec "$c" mongosh --quiet -u root -p "wrong$p" --authenticationDatabase admin --eval 'db.getSiblingDB("x").t.countDocuments({})'
	refuse "mongosh without credentials cannot read data" \
		docker exec "$c" mongosh --quiet --eval 'db.getSiblingDB("x").t.countDocuments({})'
	common_checks "$c" "$img" mongodb /data/db /data/configdb
	docker rm -f -v "$c" >/dev/null

	c="mongotrap-$RUN_ID"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /data/db --tmpfs /data/configdb \
		-e MONGO_INITDB_ROOT_USERNAME=root -e MONGO_INITDB_ROOT_PASSWORD="$p" -e SANDBOX_TEST_INIT_DELAY=10 "$img" >/dev/null
	if wait_log "$c" 'keeping the temporary server up' 30; then
		ip="$(ip_of "$c")"
		refuse "temporary phase: the Go driver from another container fails" \
			docker exec "$cl" mongocheck once "$c:27017" root "$p"
		refuse "temporary phase: TCP to <container IP>:27017 inside the container fails" \
			docker exec "$c" bash -c "exec 3<>/dev/tcp/$ip/27017"
		expect "temporary phase: unauthenticated mongosh ping on localhost succeeds" \
			bash -c "docker exec '$c' mongosh --quiet --eval 'db.adminCommand({ping:1}).ok' | grep -qx 1"
		grep -q 'init process complete' <<<"$(docker logs "$c" 2>&1)" \
			&& bad "the temporary phase ended before its checks did; the results above may be wrong"
		if wait_log "$c" 'init process complete' 30 && poll_since "$(now)" 30 docker exec "$cl" mongocheck wait "$c:27017" root "$p" >/dev/null; then
			ok "after the temporary phase: the Go driver connects from another container"
		else
			bad "never reachable after the temporary phase"
		fi
	else
		bad "temporary phase not observed"; docker logs "$c" 2>&1 | tail -20
	fi
	docker rm -f -v "$c" >/dev/null

	c="mongohalf-$RUN_ID"
	docker run -d --name "$c" --network "$NET" "${LIMITS[@]}" --tmpfs /data/db -e MONGO_INITDB_ROOT_USERNAME=root "$img" >/dev/null
	if [ "$(docker wait "$c")" != 0 ]; then ok "username without password: exits non-zero"; else bad "username without password started"; fi
	docker rm -f -v "$c" "$cl" >/dev/null
}

want=("$@")
[ "${#want[@]}" -gt 0 ] || want=(postgres postgres-kitchen redis redis-kitchen mongo)
for w in "${want[@]}"; do
	case "$w" in
		postgres) check_postgres "$POSTGRES_IMAGE" ;;
		postgres-kitchen) check_postgres "$POSTGRES_KITCHEN_IMAGE" kitchen ;;
		redis) check_redis "$REDIS_IMAGE" ;;
		redis-kitchen) check_redis "$REDIS_KITCHEN_IMAGE" kitchen ;;
		mongo) check_mongo "$MONGO_IMAGE" ;;
		*) echo "unknown image $w" >&2; exit 2 ;;
	esac
done
echo "== docker run -> first authenticated connection from another container"
printf '   %s\n' "${TIMINGS[@]}"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
