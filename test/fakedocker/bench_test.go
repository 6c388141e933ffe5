package fakedocker_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// BenchmarkCreate measures the real driver's CreateContainer (create, start,
// inspect: three requests) against one fake host, from parallel callers as a
// manager's workers are:
//
//	go test -run '^$' -bench Create -benchtime 5000x ./test/fakedocker/
func BenchmarkCreate(b *testing.B) {
	srv := serve(b, fakedocker.New(fakedocker.WithImage(testImage, fakedocker.Image{}), fakedocker.WithExecHook(fakedocker.EngineAnswers)))
	d := newDriver(b, dd.WithHost(srv.Host()))
	var n atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			s := service(fmt.Sprintf("svc-%d", i), fmt.Sprintf("uid-%d", i), fake.Script{Sleep: fake.Forever})
			if _, err := d.CreateContainer(b.Context(), s); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	if st := srv.Stats(); st.Creates != int64(b.N) || st.Duplicates != 0 {
		b.Errorf("creates %d, duplicates %d; want %d, 0", st.Creates, st.Duplicates, b.N)
	}
}
