// Package chaosplant plants known bugs, and crash points, in the manager, so that the chaos suite
// (test/chaos) can show it catches them. A normal build has none: Active is false
// unless the binary is built with the chaos_plant tag, and then only for the bug
// the SANDBOX_CHAOS_PLANT variable names.
package chaosplant

// The bugs the chaos suite must catch.
const (
	// SweepAfterFailedList: the orphan sweep goes on when it cannot list the
	// Sandboxes, taking every container for an orphan (upstream's fault).
	SweepAfterFailedList = "sweep-after-failed-list"
	// PasswordOnRestart: after a restart, ensureSecret ignores the passwords the
	// existing Secret holds and makes new ones.
	PasswordOnRestart = "password-on-restart"
	// IdentitySkipped: a Sandbox bound to one Docker host is worked on another.
	IdentitySkipped = "identity-skipped"
	// SweepIgnoresClaims: the orphan sweep reads no claim record, so a
	// claimed member, which keeps its pool's labels, is an orphan to it.
	SweepIgnoresClaims = "sweep-ignores-claims"
	// IdentityKeptOnRedial: a host's identity proof outlives what should end
	// it (a redial to a changed endpoint, a lost event stream), so the host is
	// not proven again.
	IdentityKeptOnRedial = "identity-kept-on-redial"
	// WarmKeptOnLeaseLoss: a replica keeps what it knew of a host's members
	// (warm offers, probes, recent claims) when it gives the host's Lease up,
	// and finds it as it left it when the Lease comes back.
	WarmKeptOnLeaseLoss = "warm-kept-on-lease-loss"
	// StepAwaited: a pass waits for a container step (a seed) to end instead
	// of starting it and returning; host.StepsAwaited counts it.
	StepAwaited = "step-awaited"
	// ShrinkAtOnce: a Sandbox's shrink is admitted, and its room given back,
	// before what it drops is gone.
	ShrinkAtOnce = "shrink-at-once"
	// CreatesUncounted: a pool's admission does not count its members'
	// creates in flight.
	CreatesUncounted = "creates-uncounted"
	// GrowthUnjudged: a Sandbox admitted once is not judged again, so its
	// growth takes room its quota does not have.
	GrowthUnjudged = "growth-unjudged"
	// ObserveStopsOnBadInit: a pass returns before it observes the services
	// while an init source cannot be read, so a container removed meanwhile
	// is neither made again nor reported.
	ObserveStopsOnBadInit = "observe-stops-on-bad-init"
	// TeardownNeedsInit: a deleted Sandbox's teardown reads its init scripts
	// first, and waits while they cannot be read.
	TeardownNeedsInit = "teardown-needs-init"
	// ClaimedOfferedAgain: a pool offers the members claims renamed as well as
	// its own, and the warm index offers what a claim took, so a member that
	// serves one Sandbox is claimed by the next: two agents share one store.
	ClaimedOfferedAgain = "claimed-offered-again"
	// HostGoesWhileBound: a DockerHost being deleted drops its finalizer
	// whatever is bound to it, so its Sandboxes and pools lose the host that
	// serves them.
	HostGoesWhileBound = "host-goes-while-bound"
)

// Env is the variable a chaos_plant build reads the planted bug's name from.
const Env = "SANDBOX_CHAOS_PLANT"

// Crash points: CrashAfter kills a chaos_plant build after the step CrashEnv
// names, so tests stop the manager between the steps of a claim.
const (
	CrashEnv           = "SANDBOX_CRASH_AFTER"
	AfterClaimRecorded = "claim-recorded"
	// AfterClaimSecret: the Secret is made with a reserved member's password
	// (the member's rename runs beside it: done or not).
	AfterClaimSecret = "claim-secret"
	// AfterClaimRenamed: a reserved member renamed and its Secret made, the
	// pass not yet reported.
	AfterClaimRenamed = "claim-renamed"
	// AfterClaimRenamedNoSecret: a reserved member renamed, its Secret's
	// create held back (Hold), so never made.
	AfterClaimRenamedNoSecret = "claim-renamed-no-secret"
	AfterClaimRotated         = "claim-rotated"
)
