package controllertest

import (
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricValue reads a counter's value, or a histogram's sample count, from
// controller-runtime's registry (0 when absent).
func MetricValue(name string, labels map[string]string) float64 {
	mfs, _ := ctrlmetrics.Registry.Gather() // a stopped manager's collector may fail; ours do not
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Reaped is how many orphans of kind the sweep reaped.
func Reaped(kind string) float64 {
	return MetricValue("sandbox_orphans_reaped_total", map[string]string{"kind": kind})
}

// SweepErrors is how many sweeps failed at stage.
func SweepErrors(stage string) float64 {
	return MetricValue("sandbox_sweep_errors_total", map[string]string{"stage": stage})
}
