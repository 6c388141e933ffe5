package main

import (
	"errors"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// TestEachRuleOnce: a bad value is reported once, in the flag's words, whether
// the rule is the manager's or Options.Validate's.
func TestEachRuleOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--instance=-x-"}, `--instance "-x-" must be a label value: 1-63 letters`},
		{[]string{"--legacy-instances=default,a b"}, `--legacy-instances: "a b" must be a label value`},
		{[]string{"--owner-template=agent"}, `--owner-template "agent" must contain {agentID}`},
		{[]string{"--default-memory=8Gi"}, "--default-memory 8Gi exceeds --max-memory 4Gi"},
		{[]string{"--default-memory=1Mi"}, "--default-memory 1Mi is below Docker's minimum of 6Mi"},
		{[]string{"--max-memory=0"}, "--max-memory must be a positive quantity"},
		{[]string{"--default-cpu=0"}, "--default-cpu must be at least 10m"},
		{[]string{"--max-cpu=5m"}, "--max-cpu must be at least 10m"},
		{[]string{"--default-network=host"}, `--default-network "host": leave it empty for Docker's default bridge`},
		{[]string{"--allowed-networks=team-a,bridge"}, `--allowed-networks: "bridge" cannot be allowed`},
		{[]string{"--default-cpu=2", "--max-cpu=1"}, "--default-cpu 2 exceeds --max-cpu 1"},
		{[]string{"--pids-limit=0"}, "--pids-limit must be at least 1, not 0"},
		{[]string{"--update-strategy=Always"}, `--update-strategy "Always": want OnDelete or RollingUpdate`},
		{[]string{"--stop-timeout=0s"}, "--stop-timeout must be a positive duration"},
		{[]string{"--resync-period=-1m"}, "--resync-period must be a positive duration"},
		{[]string{"--grace-period=0s"}, "--grace-period must be a positive duration"},
		{[]string{"--probe-deadline=redis=0s"}, "--probe-deadline redis=0s: want a positive duration"},
		{[]string{"--probe-deadline=cassandra=1m"}, `--probe-deadline: unknown engine "cassandra" (engines: postgres, redis, mongo)`},
		{[]string{"--redis-image=Redis"}, `--redis-image "Redis" is not an image reference`},
		{[]string{"--postgres-kitchen-sink-image=a b"}, `--postgres-kitchen-sink-image "a b" is not an image reference`},
		{[]string{"--mongo-image="}, "--mongo-image must not be empty"},
		{[]string{"--docker-host="}, "--docker-host must not be empty"},
		{[]string{"--pull-timeout=0s"}, "--pull-timeout must be a positive duration"},
		{[]string{"--engine-version=postgres=img:1"}, `--engine-version "postgres=img:1": want ENGINE:VERSION=IMAGE[,KITCHEN_SINK_IMAGE]`},
		{[]string{"--engine-version=cassandra:4=img:1"}, `--engine-version: unknown engine "cassandra"`},
		{[]string{"--engine-version=postgres:17=Bad Image"}, `--engine-version postgres:17="Bad Image": not an image reference`},
		{[]string{"--engine-version=postgres:V17=img:1"}, "--engine-version postgres:V17: a version is 1-32 lowercase letters"},
		{[]string{"--default-version=postgres=Sixteen"}, "--default-version postgres=Sixteen: a version is 1-32 lowercase letters"},
		{[]string{"--docker-startup-timeout=0s"}, "--docker-startup-timeout must be a positive duration"},
		{[]string{"--max-concurrent-reconciles=0"}, "--max-concurrent-reconciles must be at least 1, not 0"},
		{[]string{"--placement-workers=0"}, "--placement-workers must be at least 1, not 0"},
		{[]string{"--leader-election-id="}, `--leader-election-id "" must be a Lease name`},
		{[]string{"--leader-election-id=Sandbox_Lease"}, `--leader-election-id "Sandbox_Lease" must be a Lease name`},
		{[]string{"--leader-election-namespace=Kube_System"}, `--leader-election-namespace "Kube_System" must be a namespace name`},
		{[]string{"--metrics-cert-dir=/certs"}, `--metrics-cert-dir "/certs" serves nothing without --metrics-secure`},
		{[]string{"--leader-election-retry-period=10s"}, "leader election needs --leader-election-retry-period (10s) < --leader-election-renew-deadline (10s)"},
	} {
		_, err := parseSettings(tc.args, noEnv, nil)
		if err == nil {
			t.Errorf("%v: accepted", tc.args)
			continue
		}
		if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: want exactly one problem saying %q, got:\n%v", tc.args, tc.want, err)
		}
	}
}

// TestProblemsReportedTogether: every bad flag is reported in one go, each once.
func TestProblemsReportedTogether(t *testing.T) {
	_, err := parseSettings([]string{
		"--instance=-x", "--default-memory=8Gi", "--grace-period=0s", "--redis-image=Redis",
		"--max-concurrent-reconciles=0", "--docker-host=nowhere", "--pids-limit=-1",
	}, noEnv, nil)
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	for _, want := range []string{"--instance", "--default-memory 8Gi exceeds", "--grace-period", "--redis-image",
		"--max-concurrent-reconciles", "--docker-host", "--pids-limit"} {
		n := 0
		for _, line := range lines {
			if strings.HasPrefix(line, want) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%q reported %d times in:\n%v", want, n, err)
		}
	}
	if len(lines) != 7 {
		t.Errorf("%d problems, want 7:\n%v", len(lines), err)
	}
}

// TestOptionsMessagesNameFlags: the flags Options.Validate names exist, so its
// words are the operator's.
func TestOptionsMessagesNameFlags(t *testing.T) {
	var o controllers.Options // zero: breaks nearly every rule
	o.Instance, o.LegacyInstances, o.AllowedNetworks, o.DefaultNetwork = "-x", []string{""}, []string{"none"}, "host"
	o.Images = map[string]engine.Images{"postgres": {Default: "A", KitchenSink: "B"}, "redis": {Default: "C"}}
	o.ProbeDeadlines = map[string]time.Duration{"mongo": -1}
	err := o.Validate()
	if err == nil {
		t.Fatal("zero Options accepted")
	}
	f := newFlags(&settings{options: controllers.DefaultOptions()}, noEnv)
	names := regexp.MustCompile(`--[a-z][a-z-]*`).FindAllString(err.Error(), -1)
	if len(names) < 10 {
		t.Errorf("only %d flag names in:\n%v", len(names), err)
	}
	for _, name := range names {
		if f.Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("Options.Validate names %s, which is no flag", name)
		}
	}
}

// TestFlagSpellings: the spellings the docs (docs/operating.md, docs/security.md),
// the Deployment, hack/demo.sh and the e2e suite use all parse; a single-dash
// long flag is explained.
func TestFlagSpellings(t *testing.T) {
	s, err := parseSettings([]string{
		"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address", ":8081",
		"--kubeconfig", "/tmp/kubeconfig", "--instance", "demo", "--default-network", "demo",
		"--legacy-instances=default", "--allowed-networks", "team-a,team-b",
		"--postgres-image=localhost:5001/pg:16", "--mongo-image", "localhost:5001/mongo:8",
		"--zap-encoder", "console", "--zap-devel", "--sweep=false",
		"--leader-election-namespace", "default", "--leader-election-id", "e2e-1",
		"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms",
	}, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.leaderElect || s.sweep || s.probeAddr != ":8081" || s.options.Instance != "demo" || !s.zap.Development ||
		!slices.Equal(s.options.LegacyInstances, []string{"default"}) || !slices.Equal(s.options.AllowedNetworks, []string{"team-a", "team-b"}) ||
		s.options.Images["mongo"].Default != "localhost:5001/mongo:8" || s.renewDeadline.String() != "3s" {
		t.Errorf("settings = %+v", s)
	}
	_, err = parseSettings([]string{"-leader-elect"}, noEnv, nil)
	if err == nil || !strings.Contains(err.Error(), "two dashes (--leader-elect)") {
		t.Errorf("-leader-elect: %v", err)
	}
	_, err = parseSettings([]string{"--sweep=maybe"}, noEnv, nil)
	if err == nil || !strings.Contains(err.Error(), `--sweep "maybe": want true or false`) {
		t.Errorf("--sweep=maybe: %v", err)
	}
	_, err = parseSettings([]string{"-h"}, noEnv, &strings.Builder{})
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}
