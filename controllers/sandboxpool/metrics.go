package sandboxpool

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// poolMetrics are the warm pools' own figures: how long a member takes from
// create to claimable (the claims are counted by the Sandbox side).
var poolMetrics = struct {
	refillSecs *prometheus.HistogramVec
}{
	refillSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sandbox_pool_refill_seconds",
		Help:    "Time from a pool member's creation to its first passed probe, by engine.",
		Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60},
	}, []string{"engine"}),
}

func init() {
	ctrlmetrics.Registry.MustRegister(poolMetrics.refillSecs)
}
