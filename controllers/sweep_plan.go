package controllers

import (
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// sweepPlan collects what a pass removes and when the next container comes of age.
type sweepPlan struct {
	now     time.Time
	grace   time.Duration
	reap    []orphan
	waiting int
	next    time.Duration
}

type orphan struct {
	dd.ContainerSummary
	kind string
	age  time.Duration
}

// consider plans to remove c once it is older than the grace period and, since
// missingSince, its owner (or Sandbox) has been gone that long.
func (p *sweepPlan) consider(c dd.ContainerSummary, kind string, missingSince time.Time) {
	created := c.CreatedAt.Add(listSlack)
	deadline := created.Add(p.grace)
	if d := missingSince.Add(p.grace); d.After(deadline) {
		deadline = d
	}
	if left := deadline.Sub(p.now); left > 0 {
		p.waiting++
		p.next = soonest(p.next, left)
		return
	}
	p.reap = append(p.reap, orphan{ContainerSummary: c, kind: kind, age: p.now.Sub(c.CreatedAt)})
}
