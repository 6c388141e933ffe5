// Package testclients connects to a sandbox service with the engine's real client
// (pgx, go-redis, the official mongo driver), the way an agent uses the published
// ROBOCO_TEST_* variables. Tests only.
package testclients

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	mongoopts "go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Connect logs in to engine at addr with the published variables vars (addr replaces
// their HOST: a test process outside Docker resolves no container names) and runs
// a write and a read.
func Connect(ctx context.Context, engine, addr string, vars map[string]string) error {
	switch engine {
	case "postgres":
		return ConnectURL(ctx, engine, fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable",
			vars["ROBOCO_TEST_DB_USER"], vars["ROBOCO_TEST_DB_PASSWORD"],
			net.JoinHostPort(addr, vars["ROBOCO_TEST_DB_PORT"]), vars["ROBOCO_TEST_DB_ADMIN_DB"]))
	case "redis":
		rdb := goredis.NewClient(&goredis.Options{Addr: net.JoinHostPort(addr, vars["ROBOCO_TEST_REDIS_PORT"]),
			Password: vars["ROBOCO_TEST_REDIS_PASSWORD"]})
		return redisSession(ctx, rdb)
	case "mongo":
		return ConnectURL(ctx, engine, fmt.Sprintf("mongodb://%s:%s@%s/?authSource=%s",
			vars["ROBOCO_TEST_MONGO_USER"], vars["ROBOCO_TEST_MONGO_PASSWORD"],
			net.JoinHostPort(addr, vars["ROBOCO_TEST_MONGO_PORT"]), vars["ROBOCO_TEST_MONGO_AUTH_DB"]))
	}
	return fmt.Errorf("no client for engine %q", engine)
}

// ConnectURL logs in to engine with a connection URL alone (as an agent
// reading ROBOCO_TEST_*_URL does), and runs a write and a read.
func ConnectURL(ctx context.Context, engine, rawURL string) error {
	switch engine {
	case "postgres":
		conn, err := pgx.Connect(ctx, rawURL)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			return fmt.Errorf("SELECT 1 = %d, %w", one, err)
		}
		return nil
	case "redis":
		opts, err := goredis.ParseURL(rawURL)
		if err != nil {
			return err
		}
		return redisSession(ctx, goredis.NewClient(opts))
	case "mongo":
		// Note: one server, not a replica set; a short selection timeout fails fast.
		sep := "?"
		if strings.Contains(rawURL, "?") {
			sep = "&"
		}
		cl, err := mongo.Connect(mongoopts.Client().ApplyURI(rawURL + sep + "directConnection=true&serverSelectionTimeoutMS=5000"))
		if err != nil {
			return err
		}
		defer func() { _ = cl.Disconnect(context.Background()) }()
		if err := cl.Ping(ctx, nil); err != nil {
			return err
		}
		_, err = cl.Database("sandbox").Collection("it").InsertOne(ctx, map[string]string{"k": "v"})
		return err
	}
	return fmt.Errorf("no client for engine %q", engine)
}

func redisSession(ctx context.Context, rdb *goredis.Client) error {
	defer func() { _ = rdb.Close() }()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		return err
	}
	return rdb.Ping(ctx).Err()
}
