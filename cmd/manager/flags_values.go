package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// probeDeadlinesValue is an engine=duration list. It only parses: which engines
// and durations are allowed is Options.Validate's to say.
type probeDeadlinesValue struct{ m *map[string]time.Duration }

func (p *probeDeadlinesValue) String() string {
	if p == nil || p.m == nil || len(*p.m) == 0 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(*p.m)) {
		parts = append(parts, name+"="+(*p.m)[name].String())
	}
	return strings.Join(parts, ",")
}

func (p *probeDeadlinesValue) Set(s string) error {
	m := map[string]time.Duration{}
	for pair := range strings.SplitSeq(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return errors.New("want engine=duration pairs, e.g. postgres=120s,mongo=90s")
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("%s=%s: want a duration such as 90s or 2m", name, value)
		}
		m[name] = d
	}
	*p.m = m
	return nil
}

// Type is the argument name --help shows.
func (p *probeDeadlinesValue) Type() string { return "engine=duration,..." }
