package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// apiTrace is a plain-HTTP proxy in front of the test API server that records
// each request it answers while tracing, so a benchmark sees when the manager's
// writes happened and how long each took.
type apiTrace struct {
	kubeconfig string
	mu         sync.Mutex
	tracing    bool
	reqs       []testenv.Request
}

// traceAPI starts the proxy (it talks to the API server with the suite's
// credentials) and writes a kubeconfig for it.
func traceAPI(t *testing.T) *apiTrace {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &apiTrace{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, Transport: transport, FlushInterval: -1}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		rp.ServeHTTP(w, r)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.tracing && r.URL.Query().Get("watch") == "" {
			a.reqs = append(a.reqs, testenv.Request{Method: r.Method, Path: r.URL.Path, At: at, Took: time.Since(at)})
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: trace, cluster: {server: 'http://%s'}}]\n"+
		"users: [{name: trace, user: {}}]\ncontexts: [{name: trace, context: {cluster: trace, user: trace}}]\ncurrent-context: trace\n", l.Addr())
	if err := os.WriteFile(a.kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *apiTrace) trace() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tracing, a.reqs = true, nil
}

func (a *apiTrace) traced() []testenv.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tracing = false
	return a.reqs
}

// logLine is one line of the manager's JSON log.
type logLine struct {
	At      time.Time
	Msg     string
	Fields  map[string]any
	Sandbox string // the Sandbox a controller-runtime line is about
}

// managerLog reads the JSON lines of a manager run with --zap-encoder=json and
// --zap-time-encoding=rfc3339nano.
func managerLog(t *testing.T, m *manager) []logLine {
	t.Helper()
	f, err := os.Open(m.log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var raw map[string]any
		if json.Unmarshal(sc.Bytes(), &raw) != nil {
			continue
		}
		ts, _ := raw["ts"].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		l := logLine{At: at, Fields: raw}
		l.Msg, _ = raw["msg"].(string)
		if sb, ok := raw["Sandbox"].(map[string]any); ok {
			l.Sandbox, _ = sb["name"].(string)
		}
		out = append(out, l)
	}
	return out
}

var bucketLine = regexp.MustCompile(`^sandbox_pool_claim_seconds_(bucket|sum|count)\{engine="(\w+)"(?:,le="([^"]+)")?\} (\S+)$`)

// claimHistogram reads sandbox_pool_claim_seconds from the manager's /metrics:
// per engine the count, mean, and the buckets holding the median and the worst.
func claimHistogram(t *testing.T, addr string) string {
	t.Helper()
	body := metricsText(t, addr)
	type hist struct {
		sum, count float64
		les        []float64
		cum        []float64
	}
	hs := map[string]*hist{}
	for _, line := range strings.Split(body, "\n") {
		m := bucketLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h := hs[m[2]]
		if h == nil {
			h = &hist{}
			hs[m[2]] = h
		}
		v, _ := strconv.ParseFloat(m[4], 64)
		switch m[1] {
		case "sum":
			h.sum = v
		case "count":
			h.count = v
		default:
			le, _ := strconv.ParseFloat(m[3], 64)
			h.les, h.cum = append(h.les, le), append(h.cum, v)
		}
	}
	var parts []string
	for _, e := range sortedKeys(hs) {
		h := hs[e]
		upTo := func(q float64) string {
			for i, c := range h.cum {
				if c >= q*h.count {
					return "≤ " + seconds(h.les[i])
				}
			}
			return "?"
		}
		parts = append(parts, fmt.Sprintf("%s: %d claims, mean %s, p50 %s, max %s", e, int(h.count),
			ms(time.Duration(h.sum/h.count*float64(time.Second))), upTo(0.5), upTo(1)))
	}
	return strings.Join(parts, "; ")
}

func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "+Inf"
	}
	return ms(time.Duration(s * float64(time.Second)))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// workMeans are, per controller, the mean time a key waited in its queue and
// the mean pass (controller-runtime's workqueue_queue_duration_seconds and
// controller_runtime_reconcile_time_seconds) from the manager's /metrics at
// addr, as sums and counts to difference between two reads.
type workMeans map[string][2]float64 // "queue sandbox" → {sum, count}

var sumCountLine = regexp.MustCompile(`^(workqueue_queue_duration_seconds|controller_runtime_reconcile_time_seconds)_(sum|count)\{(?:controller|name)="([\w-]+)"[^}]*\} (\S+)$`)

func readWork(t *testing.T, addr string) workMeans {
	t.Helper()
	body := metricsText(t, addr)
	out := workMeans{}
	for _, line := range strings.Split(body, "\n") {
		m := sumCountLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := "queue " + m[3]
		if strings.HasPrefix(m[1], "controller_runtime") {
			key = "pass " + m[3]
		}
		v, _ := strconv.ParseFloat(m[4], 64)
		sc := out[key]
		if m[2] == "sum" {
			sc[0] += v
		} else {
			sc[1] += v
		}
		out[key] = sc
	}
	return out
}

// since says, for each controller that worked between before and w, its
// passes and their mean queue wait and duration.
func (w workMeans) since(before workMeans) string {
	var parts []string
	for _, k := range sortedKeys(w) {
		n := w[k][1] - before[k][1]
		if n <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %d, mean %s", k, int(n), ms(time.Duration((w[k][0]-before[k][0])/n*float64(time.Second)))))
	}
	return strings.Join(parts, "; ")
}

// metricsText is the manager's /metrics at addr.
func metricsText(t *testing.T, addr string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	return string(body)
}
