package dockerdriver

import (
	"context"
	"errors"
	"sync/atomic"
)

// A pass proves which daemon its host's driver reaches (the identity marker it
// reads back) and then acts on what it proved. When the driver is re-dialled
// meanwhile (the DockerHost's endpoint changed; the new endpoint may reach
// another host), the rest of the pass, and the work it started beside it
// (pulls, creates), must not reach the daemon dialled since: a Switch refuses
// the calls of a ctx whose proof is of an earlier dial, and the next pass
// proves the host again.

type proofKey struct{}

// proof is a pass's slot: the dial its identity proof was read on, plus one
// (0: nothing proven yet).
type proof struct{ dial atomic.Uint64 }

// errRedialled refuses a call made for a proof of an earlier dial.
var errRedialled = errors.New("the Docker host was re-dialled (its endpoint changed) since this pass proved which daemon it reaches; the next pass proves it again")

// WithProof gives a pass's ctx a slot for its identity proof (SetProof).
func WithProof(ctx context.Context) context.Context {
	return context.WithValue(ctx, proofKey{}, &proof{})
}

// SetProof records in ctx's slot (if it has one) the dial a proof was read on:
// a Switch then refuses ctx's calls once it is re-dialled.
func SetProof(ctx context.Context, dial uint64) {
	if p, ok := ctx.Value(proofKey{}).(*proof); ok {
		p.dial.Store(dial + 1)
	}
}

// CarryProof is dst with src's proof: for work a pass starts that runs on
// beyond it, under the manager's lifetime.
func CarryProof(dst, src context.Context) context.Context {
	if p, ok := src.Value(proofKey{}).(*proof); ok {
		return context.WithValue(dst, proofKey{}, p)
	}
	return dst
}

// provenDial is the dial ctx's proof is of, if any.
func provenDial(ctx context.Context) (uint64, bool) {
	p, ok := ctx.Value(proofKey{}).(*proof)
	if !ok {
		return 0, false
	}
	d := p.dial.Load()
	return d - 1, d != 0
}
