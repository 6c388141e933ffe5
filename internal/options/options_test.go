package options

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// TestOptionsValidate: each rule refuses what it must, once, in the flags' words,
// and accepts what it must.
func TestOptionsValidate(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" means valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"instance empty: derived from the cluster", func(o *Options) { o.Instance = "" }, ""},
		{"instance", func(o *Options) { o.Instance = "ci" }, ""},
		{"legacy instances", func(o *Options) { o.LegacyInstances = []string{"default", "ci_1"} }, ""},
		{"legacy instance not a label value", func(o *Options) { o.LegacyInstances = []string{"default", "a b"} },
			`--legacy-instances: "a b" must be a label value`},
		{"legacy instance empty", func(o *Options) { o.LegacyInstances = []string{""} }, `--legacy-instances: "" must be a label value`},
		{"instance not a label value", func(o *Options) { o.Instance = "team a" }, `--instance "team a" must be a label value`},
		{"instance too long", func(o *Options) { o.Instance = strings.Repeat("a", 64) }, "--instance"},
		{"instance with dots", func(o *Options) { o.Instance = "ci_1.eu-west" }, ""},
		{"image override", func(o *Options) {
			o.Images = map[string]engine.Images{"postgres": {Default: "registry.example:5000/team/pg:16", KitchenSink: "pgk@sha256:" + strings.Repeat("a", 64)}}
		}, ""},
		{"empty image is no override", func(o *Options) { o.Images = map[string]engine.Images{"redis": {}} }, ""},
		{"image not a reference", func(o *Options) { o.Images = map[string]engine.Images{"redis": {Default: "Redis"}} },
			`--redis-image "Redis" is not an image reference (e.g. postgres:16-alpine`},
		{"kitchen-sink image not a reference", func(o *Options) { o.Images = map[string]engine.Images{"postgres": {KitchenSink: "a b"}} },
			`--postgres-kitchen-sink-image "a b" is not an image reference`},
		{"image of unknown engine", func(o *Options) { o.Images = map[string]engine.Images{"cassandra": {Default: "cassandra:5"}} },
			`image override for unknown engine "cassandra" (engines: postgres, redis, mongo)`},
		{"owner template", func(o *Options) { o.OwnerTemplate = "agent" }, `--owner-template "agent" must contain {agentID}, e.g. roboco-agent-{agentID}`},
		{"stop timeout", func(o *Options) { o.StopTimeout = 0 }, "--stop-timeout must be a positive duration such as 30s or 5m, not 0s"},
		{"grace period", func(o *Options) { o.GracePeriod = -time.Second }, "--grace-period must be a positive duration such as 30s or 5m, not -1s"},
		{"resync period", func(o *Options) { o.ResyncPeriod = 0 }, "--resync-period must be a positive duration"},
		{"sweep interval", func(o *Options) { o.SweepInterval = 0 }, "--sweep-interval must be a positive duration"},
		{"probe deadline", func(o *Options) { o.ProbeDeadlines = map[string]time.Duration{"postgres": 2 * time.Minute} }, ""},
		{"probe deadline not positive", func(o *Options) { o.ProbeDeadlines = map[string]time.Duration{"redis": 0} },
			"--probe-deadline redis=0s: want a positive duration such as 90s or 2m"},
		{"probe deadline of unknown engine", func(o *Options) { o.ProbeDeadlines = map[string]time.Duration{"cassandra": time.Minute} },
			`--probe-deadline: unknown engine "cassandra" (engines: postgres, redis, mongo)`},
		{"default memory below Docker's minimum", func(o *Options) { o.DefaultMemory = q("5Mi") }, "--default-memory 5Mi is below Docker's minimum of 6Mi"},
		{"default memory at Docker's minimum", func(o *Options) { o.DefaultMemory = q("6Mi") }, ""},
		{"default memory over max", func(o *Options) { o.DefaultMemory = q("8Gi") }, "--default-memory 8Gi exceeds --max-memory 4Gi"},
		{"max memory not positive", func(o *Options) { o.MaxMemory = q("0") }, "--max-memory must be a positive quantity such as 4Gi, not 0"},
		{"default cpu not positive", func(o *Options) { o.DefaultCPU = q("0") }, "--default-cpu must be at least 10m (Docker's smallest CPU limit), such as 1 or 500m, not 0"},
		{"default cpu below Docker's floor", func(o *Options) { o.DefaultCPU = q("5m") }, "--default-cpu must be at least 10m"},
		{"default cpu at Docker's floor", func(o *Options) { o.DefaultCPU = q("10m") }, ""},
		{"default cpu over max", func(o *Options) { o.DefaultCPU, o.MaxCPU = q("2"), q("1") }, "--default-cpu 2 exceeds --max-cpu 1"},
		{"max cpu not positive", func(o *Options) { o.MaxCPU = q("-1") }, "--max-cpu must be at least 10m (Docker's smallest CPU limit), such as 4 or 1500m, not -1"},
		{"default network", func(o *Options) { o.DefaultNetwork = "roboco_default" }, ""},
		{"default network host", func(o *Options) { o.DefaultNetwork = "host" }, `--default-network "host": leave it empty for Docker's default bridge; host and none cannot be used`},
		{"default network bridge by name", func(o *Options) { o.DefaultNetwork = "bridge" }, `--default-network "bridge": leave it empty`},
		{"default network not a name", func(o *Options) { o.DefaultNetwork = "my net" }, `--default-network "my net" must be a Docker network name`},
		{"allowed networks", func(o *Options) { o.AllowedNetworks = []string{"team-a", "ci_net.1"} }, ""},
		{"allowed network none", func(o *Options) { o.AllowedNetworks = []string{"team-a", "none"} },
			`--allowed-networks: "none" cannot be allowed: Sandboxes may join only user-defined networks (host, none, bridge are refused)`},
		{"allowed network not a name", func(o *Options) { o.AllowedNetworks = []string{"-x"} }, `--allowed-networks: "-x" must be a Docker network name`},
		{"pids limit", func(o *Options) { o.PidsLimit = 0 }, "--pids-limit must be at least 1, not 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.change(&o)
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Errorf("accepted, want %q", tc.want)
			case strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), tc.want):
				t.Errorf("want one problem saying %q, got:\n%v", tc.want, err)
			}
		})
	}
}

// TestOptionsValidateReportsAll: every problem is reported, not just the first.
func TestOptionsValidateReportsAll(t *testing.T) {
	var o Options // zero: breaks every rule that has no zero-value default
	o.Images = map[string]engine.Images{"redis": {Default: "Redis"}}
	o.Instance = "-bad-"
	err := o.Validate()
	if err == nil {
		t.Fatal("zero Options accepted")
	}
	for _, want := range []string{"--instance", "--redis-image", "--owner-template", "--stop-timeout", "--grace-period",
		"--resync-period", "--sweep-interval", "--default-memory", "--max-memory", "--default-cpu", "--max-cpu", "--pids-limit"} {
		n := 0
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.HasPrefix(line, want+" ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s reported %d times:\n%v", want, n, err)
		}
	}
}

// TestNetworkAllowlist: spec.network is the default, or one the operator lists;
// a refusal names what is allowed.
func TestNetworkAllowlist(t *testing.T) {
	o := DefaultOptions()
	o.DefaultNetwork, o.AllowedNetworks = "agents", []string{"team-a"}
	for _, tc := range []struct{ requested, want, refusal string }{
		{"", "agents", ""},
		{"agents", "agents", ""},
		{"team-a", "team-a", ""},
		{"payments", "", `network "payments" is not allowed; allowed: agents, team-a, or leave spec.network empty for agents`},
	} {
		got, err := o.Network(tc.requested)
		switch {
		case tc.refusal == "" && (err != nil || got != tc.want):
			t.Errorf("network(%q) = %q, %v; want %q", tc.requested, got, err, tc.want)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("network(%q) error = %v; want %q", tc.requested, err, tc.refusal)
		}
	}
	bridge := DefaultOptions()
	if _, err := bridge.Network("team-a"); err == nil || !strings.Contains(err.Error(), "allows only Docker's default bridge (leave spec.network empty)") {
		t.Errorf("with no default and no allowlist: %v", err)
	}
}
