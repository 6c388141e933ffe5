package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// A controller test typically seeds images, injects the fault under test,
// and asserts on call counts.
func Example() {
	ctx := context.Background()
	f := fake.New()
	f.AddRegistryImage("postgres:16-alpine", fake.Image{Volumes: []string{"/var/lib/postgresql/data"}})

	// The first pull fails as if the daemon were restarting.
	f.Inject(fake.Fault{Verb: fake.VerbPullImage, Err: dd.ErrUnavailable, Times: 1})
	err := f.PullImage(ctx, "postgres:16-alpine", nil)
	fmt.Println(err, errors.Is(err, dd.ErrUnavailable))
	fmt.Println(f.PullImage(ctx, "postgres:16-alpine", nil))

	// The readiness probe never succeeds.
	f.OnExec(fake.ExecRule{Container: "roboco-sandbox-pg-a", Hang: true})
	_, _ = f.CreateContainer(ctx, dd.ContainerSpec{
		Name: "roboco-sandbox-pg-a", Image: "postgres:16-alpine",
		Labels: map[string]string{"sandbox.roboco.io/uid": "u1"}, OwnerLabel: "sandbox.roboco.io/uid",
	})
	_, err = f.Exec(ctx, "roboco-sandbox-pg-a", dd.ExecSpec{Cmd: []string{"pg_isready"}, Timeout: 10 * time.Millisecond})
	fmt.Println(err)

	// Steady state: no Docker calls at all.
	f.ResetCalls()
	fmt.Println(f.TotalCalls(), len(f.Volumes()))
	// Output:
	// pull postgres:16-alpine: docker unavailable true
	// <nil>
	// exec roboco-sandbox-pg-a [pg_isready]: timeout after 10ms: context deadline exceeded
	// 0 1
}
