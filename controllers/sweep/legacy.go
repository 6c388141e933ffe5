package sweep

import (
	"context"
	"errors"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// legacyOwnerGoneSince says since when a legacy container's owner has not been
// running (zero: it runs). An owner that exited counts from Docker's record of
// its exit; one that does not exist from when this process first saw it absent.
func (r *Reconciler) legacyOwnerGoneSince(ctx context.Context, owner string, now time.Time) (time.Time, error) {
	c, err := r.Driver.Inspect(ctx, owner)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case errors.Is(err, dd.ErrNotFound):
		if since, ok := r.ownerMissing[owner]; ok {
			return since, nil
		}
		r.ownerMissing[owner] = now
		return now, nil
	case err != nil:
		return time.Time{}, err
	}
	delete(r.ownerMissing, owner)
	switch {
	case c.State.Alive():
		return time.Time{}, nil
	case c.StartedAt.IsZero():
		return c.CreatedAt, nil // never started
	case c.FinishedAt.After(c.StartedAt):
		return c.FinishedAt, nil
	default:
		return now, nil // no record of when it stopped serving
	}
}

func (r *Reconciler) rememberLegacyOwners(legacy map[string][]dd.ContainerSummary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.legacyOwners = make(map[string]bool, len(legacy))
	for owner := range legacy {
		r.legacyOwners[owner] = true
	}
	for owner := range r.ownerMissing {
		if !r.legacyOwners[owner] {
			delete(r.ownerMissing, owner)
		}
	}
}

func (r *Reconciler) isLegacyOwner(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.legacyOwners[name]
}
