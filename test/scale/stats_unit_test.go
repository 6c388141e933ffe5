package scale

import (
	"testing"
)

// scrapeText is a manager's /metrics as controller-runtime writes it.
const scrapeText = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:40111",method="GET"} 1201
rest_client_requests_total{code="200",host="127.0.0.1:40111",method="PATCH"} 3000
rest_client_requests_total{code="201",host="127.0.0.1:40111",method="POST"} 1000
rest_client_requests_total{code="409",host="127.0.0.1:40111",method="PATCH"} 7
# TYPE rest_client_requests_total_extra counter
rest_client_requests_total_extra{method="GET"} 99
controller_runtime_reconcile_total{controller="sandbox",result="success"} 2000
controller_runtime_reconcile_total{controller="sandbox-placement",result="success"} 1000
go_memstats_heap_inuse_bytes 2.097152e+07
`

func TestMetricsSumAddsTheSamplesOfOneMetricWithTheLabelsAsked(t *testing.T) {
	ms := metrics(scrapeText)
	for _, c := range []struct {
		name string
		want []string
		sum  float64
	}{
		{"rest_client_requests_total", nil, 5208}, // not rest_client_requests_total_extra
		{"rest_client_requests_total", []string{`method="PATCH"`}, 3007},
		{"rest_client_requests_total", []string{`method="PATCH"`, `code="409"`}, 7},
		{"controller_runtime_reconcile_total", []string{`controller="sandbox"`}, 2000},
		{"go_memstats_heap_inuse_bytes", nil, 20971520},
		{"workqueue_depth", nil, 0},
	} {
		if got := ms.sum(c.name, c.want...); got != c.sum {
			t.Errorf("sum(%s, %v) = %v, want %v", c.name, c.want, got, c.sum)
		}
	}
	got := ms.byLabel("rest_client_requests_total", "method")
	if len(got) != 3 || got["GET"] != 1201 || got["PATCH"] != 3007 || got["POST"] != 1000 {
		t.Errorf("by method: %v, want GET 1201, PATCH 3007, POST 1000", got)
	}
}

func TestPerEndpointListsTheRatesOfWhatGrew(t *testing.T) {
	before := map[string]int64{"GET /containers/json": 100, "GET /_ping": 5}
	after := map[string]int64{"GET /containers/json": 160, "GET /_ping": 5, "POST /containers/create": 30}
	if got := perEndpoint(before, after, 60); got != "GET /containers/json 1.00, POST /containers/create 0.50" {
		t.Errorf("per endpoint: %q", got)
	}
	if got := perEndpoint(after, after, 60); got != "none" {
		t.Errorf("nothing grew: %q, want none", got)
	}
}
