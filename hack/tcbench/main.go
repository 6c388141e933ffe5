// Command tcbench starts postgres and redis with testcontainers-go, in parallel,
// each waited for by an exec probe polled every 100 ms that logs in the way the
// controller's probes do (psql SELECT 1 and redis-cli PING with a password, over the
// container's own address), and prints how long it took until both were ready. The
// controller's benchmark (test/e2e) runs it beside its own Sandboxes; it lives in a
// module of its own so that the product does not depend on testcontainers-go.
//
// Its containers carry the label sandbox.roboco.io/test=tcbench and are removed
// before it exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	password = "tcbench-password"
	poll     = 100 * time.Millisecond
	label    = "sandbox.roboco.io/test"
)

// service is one container to start and the probe that says it is ready.
type service struct {
	name  string
	image string
	env   map[string]string
	cmd   []string
	tmpfs map[string]string
	// probe runs in the container through sh, so it reaches the container's own
	// address; ready reads its output.
	probe string
	ready func(out string) bool
}

// limits cap each container.
type limits struct {
	cpus   float64
	memory int64
}

func main() {
	pg := flag.String("postgres-image", os.Getenv("POSTGRES_IMAGE"), "postgres image")
	rd := flag.String("redis-image", os.Getenv("REDIS_IMAGE"), "redis image")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long both may take")
	// The controller's default caps of a service (--default-cpu, --default-memory),
	// so both sides start the engines under the same limits.
	var caps limits
	flag.Float64Var(&caps.cpus, "cpus", 1, "CPU limit of each container (0: none)")
	flag.Int64Var(&caps.memory, "memory", 512<<20, "memory limit of each container in bytes (0: none)")
	flag.Parse()
	if *pg == "" || *rd == "" {
		fmt.Fprintln(os.Stderr, "tcbench: need -postgres-image and -redis-image (or POSTGRES_IMAGE, REDIS_IMAGE)")
		os.Exit(2)
	}
	// Note: Ryuk (testcontainers' reaper container) is off: the containers are
	// removed here, and by label if this process dies.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	services := []service{
		{name: "postgres", image: *pg,
			env:   map[string]string{"POSTGRES_USER": "sandbox", "POSTGRES_DB": "sandbox", "POSTGRES_PASSWORD": password},
			tmpfs: map[string]string{"/var/lib/postgresql/data": ""},
			probe: `PGPASSWORD=` + password + ` PGCONNECT_TIMEOUT=3 psql -X -q -tA -v ON_ERROR_STOP=1 -h "$(hostname -i)" -p 5432 -U sandbox -d sandbox -c 'SELECT 1'`,
			ready: func(out string) bool { return strings.TrimSpace(out) == "1" }},
		{name: "redis", image: *rd, cmd: []string{"redis-server", "--requirepass", password},
			tmpfs: map[string]string{"/data": ""},
			probe: `REDISCLI_AUTH=` + password + ` redis-cli --no-auth-warning -h "$(hostname -i)" -p 6379 PING`,
			ready: func(out string) bool { return strings.TrimSpace(out) == "PONG" }},
	}
	took, err := startAll(ctx, services, caps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcbench:", err)
		os.Exit(1)
	}
	parts := []string{fmt.Sprintf("ready_ms=%d", took["all"].Milliseconds())}
	for _, s := range services {
		parts = append(parts, fmt.Sprintf("%s_ms=%d", s.name, took[s.name].Milliseconds()))
	}
	fmt.Println("tcbench: " + strings.Join(parts, " "))
}

// startAll starts every service at once and returns how long each took to be
// ready, and all of them ("all"). The containers are removed once all are ready
// (or failed), so no removal competes with a start.
func startAll(ctx context.Context, services []service, caps limits) (map[string]time.Duration, error) {
	took := map[string]time.Duration{}
	var (
		mu         sync.Mutex
		wg         sync.WaitGroup
		errs       []error
		containers []testcontainers.Container
	)
	start := time.Now()
	for _, s := range services {
		wg.Go(func() {
			c, err := run(ctx, s, caps)
			mu.Lock()
			defer mu.Unlock()
			took[s.name] = time.Since(start)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			}
			if c != nil {
				containers = append(containers, c)
			}
		})
	}
	wg.Wait()
	for _, c := range containers {
		if err := testcontainers.TerminateContainer(c); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", c.GetContainerID(), err))
		}
	}
	for _, t := range took {
		took["all"] = max(took["all"], t)
	}
	return took, errors.Join(errs...)
}

// run starts s and waits until its probe passes.
func run(ctx context.Context, s service, caps limits) (testcontainers.Container, error) {
	probe := wait.ForExec([]string{"sh", "-c", s.probe}).
		WithPollInterval(poll).
		WithStartupTimeout(2 * time.Minute).
		WithResponseMatcher(func(body io.Reader) bool {
			out, _ := io.ReadAll(body)
			return s.ready(string(out))
		})
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLabels(map[string]string{label: "tcbench"}),
		testcontainers.WithEnv(s.env),
		testcontainers.WithTmpfs(s.tmpfs),
		// Note: WithWaitStrategy would cut the wait at 60s, too short for
		// an initdb on a busy machine.
		testcontainers.WithWaitStrategyAndDeadline(2*time.Minute, probe),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NanoCPUs, hc.Memory = int64(caps.cpus*1e9), caps.memory
		}),
	}
	if len(s.cmd) > 0 {
		opts = append(opts, testcontainers.WithCmd(s.cmd...))
	}
	c, err := testcontainers.Run(ctx, s.image, opts...)
	if c == nil {
		return nil, err // a nil *DockerContainer is no nil Container
	}
	return c, err
}
