package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

func noEnv(string) string { return "" }

func TestDefaults(t *testing.T) {
	s, err := parseSettings(nil, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.dockerHost != defaultDockerHost {
		t.Errorf("docker host = %q, want %q", s.dockerHost, defaultDockerHost)
	}
	for _, e := range engine.All() {
		if got, want := s.options.Images[e.Name()], e.Images(); got != want {
			t.Errorf("images of %s = %+v, want the registry's %+v", e.Name(), got, want)
		}
	}
	if s.options.OwnerTemplate != "roboco-agent-{agentID}" || s.options.GracePeriod != 180*time.Second {
		t.Errorf("owner defaults = %q, %s", s.options.OwnerTemplate, s.options.GracePeriod)
	}
}

func TestDockerHostFromEnvironment(t *testing.T) {
	env := func(k string) string {
		if k == "DOCKER_HOST" {
			return "tcp://10.0.0.5:2376"
		}
		return ""
	}
	s, err := parseSettings(nil, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.dockerHost != "tcp://10.0.0.5:2376" {
		t.Errorf("docker host = %q, want DOCKER_HOST's", s.dockerHost)
	}
	s, err = parseSettings([]string{"--docker-host", "unix:///run/other.sock"}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.dockerHost != "unix:///run/other.sock" {
		t.Errorf("docker host = %q, want the flag's", s.dockerHost)
	}
}

func TestFlagsReachOptions(t *testing.T) {
	s, err := parseSettings([]string{
		"--postgres-image=localhost:5001/pg:15", "--postgres-kitchen-sink-image=localhost:5001/pgk:15",
		"--default-network=demo", "--owner-template=agent-{agentID}", "--grace-period=1m",
		"--probe-deadline=postgres=2m,mongo=90s", "--default-memory=256Mi", "--max-cpu=2",
		"--max-concurrent-reconciles=8", "--pull-timeout=1m", "--sweep=false", "--sweep-interval=5m",
		"--engine-version=postgres:17=localhost:5001/pg:17,localhost:5001/pgk:17", "--engine-version=redis:8=localhost:5001/redis:8",
		"--default-version=postgres=15", "--init-script-timeout=2m", "--init-max-bytes=4096",
		"--init-max-scripts=8", "--init-max-timeout=5m",
	}, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := s.options
	if got := o.Images["postgres"]; got != (engine.Images{Default: "localhost:5001/pg:15", KitchenSink: "localhost:5001/pgk:15"}) {
		t.Errorf("postgres images = %+v", got)
	}
	if o.DefaultNetwork != "demo" || o.OwnerTemplate != "agent-{agentID}" || o.GracePeriod != time.Minute {
		t.Errorf("options = %+v", o)
	}
	if o.ProbeDeadlines["postgres"] != 2*time.Minute || o.ProbeDeadlines["mongo"] != 90*time.Second || len(o.ProbeDeadlines) != 2 {
		t.Errorf("probe deadlines = %v", o.ProbeDeadlines)
	}
	if got := o.Versions["postgres"]["17"]; got != (engine.Images{Default: "localhost:5001/pg:17", KitchenSink: "localhost:5001/pgk:17"}) ||
		o.Versions["redis"]["8"].Default != "localhost:5001/redis:8" || o.DefaultVersions["postgres"] != "15" {
		t.Errorf("versions = %v, default versions = %v", o.Versions, o.DefaultVersions)
	}
	if o.InitScriptTimeout != 2*time.Minute || o.InitMaxBytes != 4096 || o.InitMaxScripts != 8 || o.InitMaxTimeout != 5*time.Minute {
		t.Errorf("init scripts: %s each, %d bytes, %d keys, %s in all", o.InitScriptTimeout, o.InitMaxBytes, o.InitMaxScripts, o.InitMaxTimeout)
	}
	if s.sweep || o.SweepInterval != 5*time.Minute {
		t.Errorf("sweep %t every %s", s.sweep, o.SweepInterval)
	}
	if o.DefaultMemory.String() != "256Mi" || o.MaxCPU.String() != "2" || s.maxConcurrentReconciles != 8 || s.pullTimeout != time.Minute {
		t.Errorf("memory %s, cpu %s, workers %d, pull %s", o.DefaultMemory.String(), o.MaxCPU.String(), s.maxConcurrentReconciles, s.pullTimeout)
	}
}

// TestBadFlags: every refusal names the flag and what it allows.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--probe-deadline=cassandra=1m"}, []string{"unknown engine \"cassandra\"", "postgres, redis, mongo"}},
		{[]string{"--probe-deadline=postgres"}, []string{"--probe-deadline", "engine=duration"}},
		{[]string{"--default-memory=lots"}, []string{"--default-memory", "512Mi"}},
		{[]string{"--default-memory=8Gi"}, []string{"--default-memory 8Gi exceeds --max-memory 4Gi"}},
		{[]string{"--default-memory=1Mi"}, []string{"6Mi"}},
		{[]string{"--default-cpu=2", "--max-cpu=1"}, []string{"--default-cpu 2 exceeds --max-cpu 1"}},
		{[]string{"--owner-template=agent"}, []string{"--owner-template", "{agentID}"}},
		{[]string{"--grace-period=0s"}, []string{"--grace-period must be a positive duration"}},
		{[]string{"--sweep-interval=-1s"}, []string{"--sweep-interval must be a positive duration"}},
		{[]string{"--init-max-scripts=-1"}, []string{"--init-max-scripts must be at least 1"}},
		{[]string{"--init-max-timeout=-5m"}, []string{"--init-max-timeout must be a positive duration"}},
		{[]string{"--grace-period=soon"}, []string{"--grace-period"}},
		{[]string{"--grace-period"}, []string{"--grace-period needs a value: want a duration such as 30s"}},
		{[]string{"--pids-limit=many"}, []string{`--pids-limit "many": want a whole number`}},
		{[]string{"--redis-image=Redis"}, []string{"--redis-image \"Redis\" is not an image reference"}},
		{[]string{"--mongo-image="}, []string{"--mongo-image must not be empty"}},
		{[]string{"--docker-host=/var/run/docker.sock"}, []string{"--docker-host", "unix:///var/run/docker.sock"}},
		{[]string{"--max-concurrent-reconciles=0"}, []string{"at least 1"}},
		{[]string{"--leader-election-renew-deadline=20s"}, []string{"--leader-election-renew-deadline (20s) < --leader-election-lease-duration (15s)"}},
		{[]string{"--defualt-network=x"}, []string{"unknown flag --defualt-network", "did you mean --default-network?"}}, //nolint:misspell // the typo is what this case tests
		{[]string{"--mongo-kitchen-sink-image=x"}, []string{"unknown flag --mongo-kitchen-sink-image"}},
		{[]string{"stray"}, []string{"unexpected argument \"stray\""}},
	} {
		_, err := parseSettings(tc.args, noEnv, nil)
		if err == nil {
			t.Errorf("%v: accepted", tc.args)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q does not say %q", tc.args, err, want)
			}
		}
	}
}

// TestHelp: --help documents every flag with its default, engine flags included.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseSettings([]string{"--help"}, noEnv, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	help := out.String()
	f := newFlags(&settings{}, noEnv)
	f.VisitAll(func(fl *pflag.Flag) {
		if !strings.Contains(help, "\n      --"+fl.Name+" ") && !strings.Contains(help, "\n      --"+fl.Name+"\n") {
			t.Errorf("--help does not list --%s", fl.Name)
		}
	})
	// Every flag parsed is in a group, so --help cannot lose one.
	inGroups := 0
	for _, fs := range f.groups.FlagSets {
		fs.VisitAll(func(*pflag.Flag) { inGroups++ })
	}
	all := 0
	f.VisitAll(func(*pflag.Flag) { all++ })
	if inGroups != all {
		t.Errorf("%d flags, %d in groups", all, inGroups)
	}
	for _, title := range []string{"Docker host", "Images", "Sandbox defaults", "Resources per service container", "Manager", "Logging (controller-runtime's zap options)"} {
		if !strings.Contains(help, "\n"+title+":\n") {
			t.Errorf("--help has no group %q", title)
		}
	}
	for _, e := range engine.All() {
		if !strings.Contains(help, "--"+e.Name()+"-image ref") {
			t.Errorf("--help has no image flag for engine %s", e.Name())
		}
	}
	for _, want := range []string{`(default "postgres:16-alpine")`, "(default 3m0s)", "(default 512Mi)", "never removes sandbox containers", "/readyz",
		"Images are the operator's choice", "--instance name", "--default-memory quantity", "--probe-deadline engine=duration,..."} {
		if !strings.Contains(strings.Join(strings.Fields(help), " "), want) { // wrapped anywhere
			t.Errorf("--help does not say %q", want)
		}
	}
	for i, line := range strings.Split(help, "\n") {
		if len(line) > 80 && !strings.Contains(line, "://") {
			t.Errorf("help line %d is %d columns: %q", i+1, len(line), line)
		}
	}
}
