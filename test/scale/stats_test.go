package scale

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/test/fakedocker"
)

// fakeStats is the fake hosts' statistics now: sums, and each host's.
func (f *fakeHosts) fakeStats(t *testing.T) fakedocker.Summary {
	t.Helper()
	body, err := get("http://" + f.stats + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var sum fakedocker.Summary
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// observed is how many service containers the fake hosts hold, and how many of
// them a client looked at on their own since (fakedocker.Observed).
func (f *fakeHosts) observed(t *testing.T, since time.Time) fakedocker.Observed {
	t.Helper()
	body, err := get("http://" + f.stats + "/observed?since=" + since.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	var o fakedocker.Observed
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// requests is the number of Docker requests in sum, the event streams' left
// out (one long request per connection, not work).
func requests(sum fakedocker.Summary) int64 {
	var n int64
	for endpoint, v := range sum.Requests {
		if endpoint != "GET /events" {
			n += v
		}
	}
	return n
}

// perEndpoint lists each endpoint's requests between two snapshots per second.
func perEndpoint(before, after map[string]int64, seconds float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d > 0 {
			parts = append(parts, k+" "+strconv.FormatFloat(float64(d)/seconds, 'f', 2, 64))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// metrics is one scrape of a manager's /metrics (Prometheus text format).
type metrics string

// scrape reads a manager's metrics.
func (m *manager) scrape(t *testing.T) metrics {
	t.Helper()
	body, err := get("http://" + m.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return metrics(body)
}

// sum adds up the samples of the metric name whose labels include want
// (key="value" pairs, e.g. `controller="sandbox"`).
func (ms metrics) sum(name string, want ...string) float64 {
	var total float64
	for _, line := range strings.Split(string(ms), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric whose name starts with name
		}
		labels, value := "", rest
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			labels, value = rest[1:end], rest[end+1:]
		}
		if !hasLabels(labels, want) {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

func hasLabels(labels string, want []string) bool {
	pairs := strings.Split(labels, ",")
	for _, w := range want {
		if !slices.Contains(pairs, w) {
			return false
		}
	}
	return true
}

// byLabel adds up the samples of name by the value of one label.
func (ms metrics) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(ms), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		end := strings.LastIndexByte(rest, '}')
		for _, pair := range strings.Split(rest[:end], ",") {
			if v, ok := strings.CutPrefix(pair, label+"="); ok {
				f, err := strconv.ParseFloat(strings.Fields(rest[end+1:])[0], 64)
				if err == nil {
					out[strings.Trim(v, `"`)] += f
				}
			}
		}
	}
	return out
}
