package engine

// mongoNoSnapshots: FerretDB (the stand-in this project tests with) cannot
// copy a database while it serves. The official mongo image ships mongodump and
// mongorestore, which could keep a checkpoint as an archive on tmpfs; that is
// not built here, since no test could prove it.
const mongoNoSnapshots = "mongo cannot checkpoint or restore here: the image's server cannot copy a database while it serves (FerretDB); reset works"

// mongoResetJS empties every database but the server's own (admin keeps its
// users and system collections; its other collections go). It uses the Node.js
// driver that mongosh ships when the image has one (a third of mongosh's
// start-up), else mongosh itself.
const mongoResetJS = `const keepDB = (d) => d === "config" || d === "local", keepColl = (d, c) => d === "admin" && c.startsWith("system.");`

const mongoData = `case $OP in
reset) ;;
*) echo "` + mongoNoSnapshots + `" >&2; exit 1 ;;
esac
driver=
for d in /opt/mongosh/node_modules/mongodb /usr/lib/node_modules/mongosh/node_modules/mongodb /usr/local/lib/node_modules/mongosh/node_modules/mongodb; do
	[ -e "$d/package.json" ] && command -v node >/dev/null && { driver=$d; break; }
done
if [ -n "$driver" ]; then
	DRIVER=$driver node -e '` + mongoResetJS + `
const { MongoClient } = require(process.env.DRIVER);
(async () => {
	const c = new MongoClient(process.env.SANDBOX_DATA_URI);
	try {
		await c.connect();
		for (const { name } of (await c.db("admin").command({ listDatabases: 1, nameOnly: true })).databases) {
			if (keepDB(name)) continue;
			if (name !== "admin") { await c.db(name).dropDatabase(); continue; }
			for (const { name: coll } of await c.db(name).listCollections({}, { nameOnly: true }).toArray())
				if (!keepColl(name, coll)) await c.db(name).collection(coll).drop();
		}
	} finally { await c.close(); }
})().catch((e) => { console.error("mongo reset: " + e.message); process.exit(1); });' || exit 1
else
	mongosh --nodb --quiet --eval '` + mongoResetJS + `
const c = connect(process.env.SANDBOX_DATA_URI);
for (const { name } of c.adminCommand({ listDatabases: 1, nameOnly: true }).databases) {
	if (keepDB(name)) continue;
	const d = c.getSiblingDB(name);
	if (name !== "admin") { d.dropDatabase(); continue; }
	for (const coll of d.getCollectionNames()) if (!keepColl(name, coll)) d.getCollection(coll).drop();
}' >/dev/null || exit 1
fi`

// Data: see DataRunner.
func (m mongo) Data(password, addr string) DataRunner {
	return DataRunner{Ops: mongoData, Env: map[string]string{"SANDBOX_DATA_URI": m.uri(password, addr)}, NoSnapshots: mongoNoSnapshots}
}
