package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// manager is one manager process of a fleet with no Docker host of its own.
type manager struct {
	*proc
	name, metrics, health string
}

// managers are the replicas of one run, and how to start them again.
type managers struct {
	t          *testing.T
	logDir     string
	kubeconfig string
	instance   string
	// leaseNamespace is where the replicas elect (empty: one manager, no election).
	leaseNamespace string
	all            []*manager
	starts         int
}

// start runs n managers and waits until each answers /readyz.
func (ms *managers) start(n int) {
	t := ms.t
	t.Helper()
	ms.starts++
	ms.all = nil
	for i := range n {
		m := &manager{name: fmt.Sprintf("manager-%d", i), metrics: testenv.FreeAddr(t), health: testenv.FreeAddr(t)}
		args := []string{
			"--kubeconfig", ms.kubeconfig,
			"--docker-host-name=",
			"--instance", ms.instance,
			"--default-network", "sandboxes",
			"--metrics-bind-address", m.metrics,
			"--health-probe-bind-address", m.health,
			"--zap-encoder", "console",
		}
		if ms.leaseNamespace != "" {
			args = append(args, "--leader-elect", "--leader-election-namespace", ms.leaseNamespace)
		}
		// SCALE_MANAGER_ARGS: extra flags, e.g. for a sharding scheme's own settings.
		args = append(args, strings.Fields(os.Getenv("SCALE_MANAGER_ARGS"))...)
		m.proc = startProc(t, ms.logDir, fmt.Sprintf("%s-start%d", m.name, ms.starts), filepath.Join(binDir, "manager"), args...)
		ms.all = append(ms.all, m)
	}
	for _, m := range ms.all {
		testenv.WaitFor(t, time.Minute, 100*time.Millisecond, m.name+"'s /readyz", func() bool {
			_, err := get("http://" + m.health + "/readyz")
			return err == nil
		})
	}
}

// stop signals every manager at once and waits until all have ended.
func (ms *managers) stop(sig syscall.Signal) {
	for _, m := range ms.all {
		_ = m.cmd.Process.Signal(sig)
	}
	for _, m := range ms.all {
		m.stop(sig)
	}
}

// rssMiB is the managers' resident memory, each and together.
func (ms *managers) rssMiB() (each []float64, total float64) {
	for _, m := range ms.all {
		rss := m.rssMiB(ms.t)
		each = append(each, rss)
		total += rss
	}
	return each, total
}

// cpuSeconds is the managers' CPU time together.
func (ms *managers) cpuSeconds() float64 {
	var total float64
	for _, m := range ms.all {
		total += m.cpuSeconds(ms.t)
	}
	return total
}

// scrape reads every manager's metrics.
func (ms *managers) scrape() []metrics {
	out := make([]metrics, 0, len(ms.all))
	for _, m := range ms.all {
		out = append(out, m.scrape(ms.t))
	}
	return out
}

// sum adds up a metric over the scrapes of all managers.
func sum(scrapes []metrics, name string, want ...string) float64 {
	var total float64
	for _, s := range scrapes {
		total += s.sum(name, want...)
	}
	return total
}

// byLabel adds up a metric by one label over the scrapes of all managers.
func byLabel(scrapes []metrics, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range scrapes {
		for k, v := range s.byLabel(name, label) {
			out[k] += v
		}
	}
	return out
}

// passes sums up a controller's passes so far over all managers: how many, their
// mean time, and their mean wait in the queue.
func passes(scrapes []metrics, controller string) string {
	label := `controller="` + controller + `"`
	n := sum(scrapes, "controller_runtime_reconcile_time_seconds_count", label)
	queued := sum(scrapes, "workqueue_queue_duration_seconds_count", label)
	if n == 0 || queued == 0 {
		return controller + ": no pass"
	}
	return fmt.Sprintf("%s: %.0f passes, %.0f ms each, %.0f ms queued", controller, n,
		1000*sum(scrapes, "controller_runtime_reconcile_time_seconds_sum", label)/n,
		1000*sum(scrapes, "workqueue_queue_duration_seconds_sum", label)/queued)
}
