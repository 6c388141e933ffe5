package fake

import (
	"slices"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// lingering is an exec its caller stopped waiting for (it timed out) that still
// runs in its container, as Docker cannot stop an exec: a script's until its sleep
// ends, one a Hang rule made while that rule is in place (until cleared, or its
// Times are used up). The container's exit ends it.
type lingering struct {
	cmd []string
	// why is how its caller left it, for the busy error: "timed out after 1s".
	why   string
	until time.Time // a script's end, or its kill (KillAtTimeout); zero: until the container exits
	rule  *execRule // the Hang rule that made it; nil for a script
}

// linger records that run, started at start, outlives its caller in its
// container, unless it has ended already. Callers hold f.mu.
func (f *Driver) linger(run *execRun, start time.Time, why string) {
	l := &lingering{cmd: run.cmd, why: why, rule: run.rule}
	if run.rule == nil && run.runFor != Forever {
		l.until = start.Add(run.runFor)
	}
	if killed := start.Add(run.killAt); run.killAt > 0 && (l.until.IsZero() || killed.Before(l.until)) {
		l.until = killed
	}
	if !l.until.IsZero() && !time.Now().Before(l.until) {
		return
	}
	if run.c.c.State == dd.StateRunning && f.containers[run.c.c.ID] == run.c {
		run.c.lingering = l
	}
}

// lingeringIn returns c's lingering exec while it runs, and forgets it once it
// has ended. Callers hold f.mu.
func (f *Driver) lingeringIn(c *ctr) *lingering {
	l := c.lingering
	if l == nil {
		return nil
	}
	ended := c.c.State != dd.StateRunning && c.c.State != dd.StatePaused
	if l.rule != nil {
		ended = ended || !slices.Contains(f.execRules, l.rule)
	}
	if !l.until.IsZero() {
		ended = ended || !time.Now().Before(l.until)
	}
	if ended {
		c.lingering = nil
		return nil
	}
	return l
}

// ExecsRunning counts the execs of cmd that still run in the container after
// their caller stopped waiting for them (the fake keeps no other processes).
func (f *Driver) ExecsRunning(nameOrID string, cmd []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return 0
	}
	if l := f.lingeringIn(c); l != nil && slices.Equal(l.cmd, cmd) {
		return 1
	}
	return 0
}
