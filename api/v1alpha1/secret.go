package v1alpha1

// The engines a Sandbox can run.
const (
	EnginePostgres Engine = "postgres"
	EngineRedis    Engine = "redis"
	EngineMongo    Engine = "mongo"
)

// The keys of a Sandbox's credentials Secret: the ROBOCO_TEST_* variables
// upstream's agents read, per engine. An agent gets them as its environment
// (envFrom the Secret). The names are upstream's and never change.
const (
	PostgresHostKey     = "ROBOCO_TEST_DB_HOST"
	PostgresPortKey     = "ROBOCO_TEST_DB_PORT"
	PostgresUserKey     = "ROBOCO_TEST_DB_USER"
	PostgresPasswordKey = "ROBOCO_TEST_DB_PASSWORD"
	PostgresDatabaseKey = "ROBOCO_TEST_DB_ADMIN_DB"

	RedisHostKey     = "ROBOCO_TEST_REDIS_HOST"
	RedisPortKey     = "ROBOCO_TEST_REDIS_PORT"
	RedisPasswordKey = "ROBOCO_TEST_REDIS_PASSWORD"

	MongoHostKey     = "ROBOCO_TEST_MONGO_HOST"
	MongoPortKey     = "ROBOCO_TEST_MONGO_PORT"
	MongoUserKey     = "ROBOCO_TEST_MONGO_USER"
	MongoPasswordKey = "ROBOCO_TEST_MONGO_PASSWORD"
	MongoAuthDBKey   = "ROBOCO_TEST_MONGO_AUTH_DB"

	// The connection URLs, one per service, percent-encoded, whose host and
	// port are exactly the *_HOST and *_PORT values beside them:
	// postgresql://user:pw@host:port/db?sslmode=disable,
	// redis://default:pw@host:port/0, mongodb://user:pw@host:port/?authSource=admin.
	PostgresURLKey = "ROBOCO_TEST_DB_URL"
	RedisURLKey    = "ROBOCO_TEST_REDIS_URL"
	MongoURLKey    = "ROBOCO_TEST_MONGO_URL"
)

// The conventional names of the same URLs, published too when the Sandbox
// asks for them (spec.conventionalURLs).
const (
	DatabaseURLKey          = "DATABASE_URL"
	RedisURLConventionalKey = "REDIS_URL"
	MongoURIKey             = "MONGODB_URI"
)

// SecretKeys are the Secret keys one engine's service publishes. A key the
// engine does not publish is empty (Redis has no user and no database).
// +kubebuilder:object:generate=false
type SecretKeys struct {
	Host, Port, User, Password string
	// Database is the database to connect to: postgres' database, mongo's
	// authentication database.
	Database string
	// URL is the connection URL; ConventionalURL its conventional name
	// (published with spec.conventionalURLs).
	URL, ConventionalURL string
}

// KeysOf returns the Secret keys of engine e, and false for an unknown engine.
func KeysOf(e Engine) (SecretKeys, bool) {
	switch e {
	case EnginePostgres:
		return SecretKeys{Host: PostgresHostKey, Port: PostgresPortKey, User: PostgresUserKey,
			Password: PostgresPasswordKey, Database: PostgresDatabaseKey, URL: PostgresURLKey, ConventionalURL: DatabaseURLKey}, true
	case EngineRedis:
		return SecretKeys{Host: RedisHostKey, Port: RedisPortKey, Password: RedisPasswordKey,
			URL: RedisURLKey, ConventionalURL: RedisURLConventionalKey}, true
	case EngineMongo:
		return SecretKeys{Host: MongoHostKey, Port: MongoPortKey, User: MongoUserKey,
			Password: MongoPasswordKey, Database: MongoAuthDBKey, URL: MongoURLKey, ConventionalURL: MongoURIKey}, true
	}
	return SecretKeys{}, false
}

// SecretName is the name of the Secret, in the Sandbox's namespace, that holds
// its services' credentials (status.secretName says the same once published).
func SecretName(sb *Sandbox) string { return sb.Name + "-sandbox" }
