package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// "No pass waits on a container step", judged from each manager's own
// metrics: the passes that read a step's state again in one call
// (sandbox_steps_awaited_total), and the passes longer than passLimit,
// which only a wait on something a tenant controls makes (the tenant's
// slow seed runs longer: tenantSlowSeed).
const invPassWaits = "no pass waits on a container step"

// passLimit is controller-runtime's highest bucket of reconcile_time_seconds, in seconds.
const passLimit = 60.0

// passCounts is what a manager's metrics say of its passes so far.
// sandbox counts the Sandbox controller's passes.
type passCounts struct{ awaited, long, sandbox float64 }

// freeLoopback is a loopback address no listener holds now, for a manager's
// metrics.
func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// passCounts reads the manager's /metrics.
func (m *manager) passCounts(ctx context.Context) (passCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.metrics+"/metrics", nil)
	if err != nil {
		return passCounts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return passCounts{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return passCounts{}, err
	}
	var c passCounts
	for _, mt := range mfs["sandbox_steps_awaited_total"].GetMetric() {
		c.awaited += mt.GetCounter().GetValue()
	}
	for _, mt := range mfs["controller_runtime_reconcile_time_seconds"].GetMetric() {
		h := mt.GetHistogram()
		within := float64(0)
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == passLimit {
				within = float64(b.GetCumulativeCount())
			}
		}
		c.long += float64(h.GetSampleCount()) - within
	}
	for _, mt := range mfs["controller_runtime_reconcile_total"].GetMetric() {
		if slices.ContainsFunc(mt.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "controller" && l.GetValue() == "sandbox" }) {
			c.sandbox += mt.GetCounter().GetValue()
		}
	}
	return c, nil
}

// checkPasses: no manager's pass waited on a step, nor ran past passLimit,
// since the last look (a restarted manager counts from 0 again).
func (tn *tenant) checkPasses(ctx context.Context) {
	for i, m := range tn.r.mgrs {
		c, err := m.passCounts(ctx)
		if err != nil {
			continue // down or restarting: its next look counts
		}
		tn.mu.Lock()
		prev := tn.passes[i]
		tn.passes[i] = c
		tn.mu.Unlock()
		if c.awaited > prev.awaited {
			tn.r.violate(invPassWaits, fmt.Sprintf("manager %d: %v more passes read a container step's state again, waiting on it", i, c.awaited-prev.awaited))
		}
		if c.long > prev.long {
			tn.r.violate(invPassWaits, fmt.Sprintf("manager %d: %v more passes ran longer than %vs", i, c.long-prev.long, passLimit))
		}
	}
}
