package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// validate reports every problem with the settings at once, in the flags' words.
// The controllers' settings are Options.Validate's alone; here are only the rules
// about what Options does not hold, so that no rule exists twice.
func (s *settings) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if s.dockerHost == "" {
		bad("--docker-host must not be empty (e.g. %s)", defaultDockerHost)
	} else if !strings.Contains(s.dockerHost, "://") {
		bad("--docker-host %q: want a URL such as unix:///var/run/docker.sock or tcp://10.0.0.5:2376", s.dockerHost)
	}
	// Note: in Options an empty image is no override; as a flag it is a mistake.
	for _, e := range engine.All() {
		imgs := s.images[e.Name()]
		if imgs.Default == "" {
			bad("--%s must not be empty (leave it out for %s)", controllers.ImageFlag(e), e.Images().Default)
		}
		if hasKitchenSink(e) && imgs.KitchenSink == "" {
			bad("--%s must not be empty (leave it out for %s)", controllers.KitchenSinkFlag(e), e.Images().KitchenSink)
		}
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"docker-startup-timeout", s.dockerStartupTimeout}, {"pull-timeout", s.pullTimeout},
		{"leader-election-lease-duration", s.leaseDuration}, {"leader-election-renew-deadline", s.renewDeadline},
		{"leader-election-retry-period", s.retryPeriod},
	} {
		if d.value <= 0 {
			bad("--%s must be a positive duration such as 30s or 5m, not %s", d.flag, d.value)
		}
	}
	if s.maxConcurrentReconciles < 1 {
		bad("--max-concurrent-reconciles must be at least 1, not %d", s.maxConcurrentReconciles)
	}
	if s.placementWorkers < 1 {
		bad("--placement-workers must be at least 1, not %d", s.placementWorkers)
	}
	if s.renewDeadline >= s.leaseDuration || s.retryPeriod >= s.renewDeadline {
		bad("leader election needs --leader-election-retry-period (%s) < --leader-election-renew-deadline (%s) < --leader-election-lease-duration (%s)",
			s.retryPeriod, s.renewDeadline, s.leaseDuration)
	}
	if msgs := validation.IsDNS1123Subdomain(s.leaderElectionID); len(msgs) > 0 {
		bad("--leader-election-id %q must be a Lease name: at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", s.leaderElectionID)
	}
	if ns := s.leaderElectionNamespace; ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		bad("--leader-election-namespace %q must be a namespace name: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit", ns)
	}
	if s.metricsCertDir != "" && !s.metricsSecure {
		bad("--metrics-cert-dir %q serves nothing without --metrics-secure (plain HTTP has no certificate)", s.metricsCertDir)
	}
	if err := s.options.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
