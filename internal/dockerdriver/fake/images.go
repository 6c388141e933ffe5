package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// AddImage makes ref present locally.
func (f *Driver) AddImage(ref string, img Image) {
	key := mustNormalize(ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[key] = img
}

// RemoveImage deletes ref locally.
func (f *Driver) RemoveImage(ref string) {
	key := mustNormalize(ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, key)
}

// AddRegistryImage makes ref pullable.
func (f *Driver) AddRegistryImage(ref string, img Image) {
	key := mustNormalize(ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registry[key] = img
}

// RegistryPulls counts the pulls of ref that reached the registry (shared
// pulls count once).
func (f *Driver) RegistryPulls(ref string) int {
	key := mustNormalize(ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registryPulls[key]
}

// HoldPull makes pulls of ref wait at the registry until release is called
// (pulls started while held; release is idempotent).
func (f *Driver) HoldPull(ref string) (release func()) {
	key := mustNormalize(ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ok := f.holds[key]
	if !ok {
		ch = make(chan struct{})
		f.holds[key] = ch
	}
	return sync.OnceFunc(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.holds[key] == ch {
			delete(f.holds, key)
		}
		close(ch)
	})
}

func mustNormalize(ref string) string {
	key, err := dd.NormalizeRef(ref)
	if err != nil {
		panic(fmt.Sprintf("fake: invalid image reference %q: %v", ref, err))
	}
	return key
}

// ImagePresent reports whether ref is present locally.
func (f *Driver) ImagePresent(ctx context.Context, ref string) (bool, error) {
	if err := f.enter(ctx, VerbImagePresent, ref); err != nil {
		return false, err
	}
	if ref == "" {
		return false, dd.NewError("image inspect", ref, dd.ErrInvalid, errors.New("empty image reference"))
	}
	key, err := dd.NormalizeRef(ref)
	if err != nil {
		return false, dd.NewError("image inspect", ref, dd.ErrInvalid, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.images[key]
	return ok, nil
}

// PullImage pulls from the fake registry, sharing one pull per reference,
// as the real driver does.
func (f *Driver) PullImage(ctx context.Context, ref string, progress func(dd.PullProgress)) error {
	if err := f.enter(ctx, VerbPullImage, ref); err != nil {
		return err
	}
	key, err := dd.NormalizeRef(ref)
	if err != nil {
		return dd.NewError("pull", ref, dd.ErrInvalid, err)
	}
	// Under f.mu, as runPull stores the image before its flight ends: a
	// caller finds the image or the flight, never neither.
	f.mu.Lock()
	if _, ok := f.images[key]; ok {
		f.mu.Unlock()
		return nil
	}
	fl, started := f.pulls.Join(key, dd.PullProgress{Ref: ref, Status: "Waiting"}, func(publish func(dd.PullProgress)) error {
		return f.runPull(key, ref, publish)
	})
	f.mu.Unlock()

	if progress != nil {
		detach := fl.Attach(func(p dd.PullProgress) { p.Shared = !started; progress(p) })
		defer detach()
	}
	select {
	case <-fl.Done():
		return fl.Err()
	case <-ctx.Done():
		return dd.NewError("pull", ref, kindOfCtx(ctx.Err()), ctx.Err())
	}
}

// runPull serves one shared pull from the registry, counting it and waiting
// out a hold (under the pull timeout).
func (f *Driver) runPull(key, ref string, publish func(dd.PullProgress)) error {
	f.mu.Lock()
	f.registryPulls[key]++
	hold := f.holds[key]
	timeout := f.pullTimeout
	f.mu.Unlock()

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if hold != nil {
		select {
		case <-hold:
		case <-deadline.C:
			return dd.TimeoutError("pull", ref, timeout, dd.ErrPullFailed)
		}
	}
	f.mu.Lock()
	img, ok := f.registry[key]
	f.mu.Unlock()
	if !ok {
		return &dd.Error{Op: "pull", Ref: ref, Kinds: []error{dd.ErrPullFailed, dd.ErrNotFound},
			Err: fmt.Errorf("Error response from daemon: manifest for %s not found: manifest unknown: manifest unknown", ref)}
	}
	layers, size := cmp.Or(img.Layers, 1), cmp.Or(img.LayerSize, 1<<20)
	p := dd.PullProgress{Ref: ref, Layers: layers, BytesTotal: int64(layers) * size}
	for range layers {
		p.Status = "Downloading"
		p.BytesDone += size
		publish(p)
		p.Status = "Pull complete"
		p.LayersDone++
		publish(p)
	}
	f.mu.Lock()
	f.images[key] = img
	f.mu.Unlock()
	return nil
}
