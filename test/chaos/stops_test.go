package chaos

import "slices"

// giveUp ends a run without planted bugs at a cycle that did not settle:
// each later cycle would only wait out the bound again (a Secret leaked for good
// once held a run of ten cycles past the suite's timeout, saying nothing).
func (r *run) giveUp(c *cycle) bool {
	if len(r.s.stopOn) > 0 {
		return false
	}
	r.t.Logf("cycle %d did not settle within %s: the run ends here (its violations say why)", c.n, r.s.bound)
	return true
}

// caught says whether an invariant of stopOn was violated.
func (r *run) caught() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.violations, func(v violation) bool { return slices.Contains(r.s.stopOn, v.invariant) })
}

// over says the run has shown what it can: a planted run caught its bug
// (caught), or a run without planted bugs has a violation: it fails whatever
// follows, and each further action or cycle would only add its own waits (a
// DockerHost that stayed held a tenant run's every host deletion for two
// bounds, past the suite's timeout).
func (r *run) over() bool {
	if len(r.s.stopOn) > 0 {
		return r.caught()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.violations) > 0
}
