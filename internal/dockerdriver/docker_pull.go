package dockerdriver

import (
	"context"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// NormalizeRef returns the canonical form of an image reference
// ("busybox" → "docker.io/library/busybox:latest"), which is how pulls are
// shared: two spellings of one image are one pull.
func NormalizeRef(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", err
	}
	return reference.TagNameOnly(named).String(), nil
}

// PullImage makes ref present, sharing one pull among concurrent callers.
// The pull runs under the driver's lifetime and pull timeout, not under any
// caller's ctx: a caller that gives up only stops waiting, and a pull whose
// callers all left still completes (the image will be there next time).
func (d *Docker) PullImage(ctx context.Context, ref string, progress func(PullProgress)) error {
	key, err := NormalizeRef(ref)
	if err != nil {
		return NewError("pull", ref, ErrInvalid, err)
	}
	present, err := d.ImagePresent(ctx, ref)
	if err != nil {
		return wrap("pull", ref, err)
	}
	if present {
		return nil
	}

	f, started := d.pulls.Join(key, PullProgress{Ref: ref, Status: "Waiting"}, func(publish func(PullProgress)) error {
		return d.runPull(ref, publish)
	})
	if progress != nil {
		detach := f.Attach(func(p PullProgress) { p.Shared = !started; progress(p) })
		defer detach()
	}
	select {
	case <-f.Done():
		return f.Err()
	case <-ctx.Done():
		return wrap("pull", ref, ctx.Err())
	}
}

// runPull performs one shared pull and says plainly why it failed.
func (d *Docker) runPull(ref string, publish func(PullProgress)) error {
	ctx, cancel := context.WithTimeout(d.base, d.opts.pullTimeout)
	defer cancel()
	err := d.pull(ctx, ref, publish)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == context.DeadlineExceeded:
		// Whatever the transport made of it, say plainly what happened.
		return TimeoutError("pull", ref, d.opts.pullTimeout, ErrPullFailed)
	case d.base.Err() != nil:
		return &Error{Op: "pull", Ref: ref, Kinds: []error{ErrPullFailed}, Detail: "driver closed", Err: d.base.Err()}
	}
	e := &Error{Op: "pull", Ref: ref, Kinds: []error{ErrPullFailed}, Err: err}
	if k := kindOf(err); k != nil {
		e.Kinds = append(e.Kinds, k)
	}
	return e
}

func (d *Docker) pull(ctx context.Context, ref string, publish func(PullProgress)) error {
	resp, err := d.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = resp.Close() }() // a read stream: nothing is lost if closing fails
	tr := newPullTracker(ref)
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if msg.Error != nil {
			// The registry's own words (e.g. "manifest unknown") travel in
			// the stream after a 200; keep them as the error text.
			return pullStreamError(msg.Error)
		}
		if tr.update(msg) {
			publish(tr.snapshot())
		}
	}
	return nil
}

// pullStreamError turns an in-stream error into one that errors.Is can
// classify; Docker 20.10 often sends no code at all.
func pullStreamError(je *jsonstream.Error) error {
	e := registryError{msg: je.Message}
	if e.msg == "" {
		e.msg = "pull failed with no message from the daemon"
	}
	switch {
	case je.Code == 404, strings.Contains(e.msg, "not found"), strings.Contains(e.msg, "manifest unknown"):
		e.kind = cerrdefs.ErrNotFound
	case je.Code == 401, je.Code == 403:
		e.kind = cerrdefs.ErrPermissionDenied
	}
	return e
}

// registryError is a failure the registry reported through the pull stream.
type registryError struct {
	msg  string
	kind error
}

func (e registryError) Error() string        { return e.msg }
func (e registryError) Is(target error) bool { return e.kind != nil && target == e.kind }

// pullTracker folds Docker's per-layer status lines into counts.
type pullTracker struct {
	ref    string
	status string
	layers map[string]*layerProgress
	order  []string
}

type layerProgress struct {
	done           bool
	current, total int64
}

func newPullTracker(ref string) *pullTracker {
	return &pullTracker{ref: ref, layers: map[string]*layerProgress{}}
}

// update applies one message and reports whether the snapshot changed.
func (t *pullTracker) update(m jsonstream.Message) bool {
	if m.Status == "" {
		return false
	}
	t.status = m.Status
	l := t.layer(m)
	if l == nil {
		return true
	}
	switch {
	case m.Status == "Pull complete", m.Status == "Already exists":
		l.done = true
		l.current = l.total
	case m.Status == "Download complete", m.Status == "Verifying Checksum":
		l.current = l.total
	case strings.HasPrefix(m.Status, "Downloading"):
		if p := m.Progress; p != nil {
			l.current = p.Current
			if p.Total > 0 {
				l.total = p.Total
			}
		}
	}
	return true
}

// layer returns the layer a message is about, or nil when it is about the
// whole image ("Pulling from x", "Digest: ...", "Status: ...").
func (t *pullTracker) layer(m jsonstream.Message) *layerProgress {
	if m.ID == "" || strings.HasPrefix(m.Status, "Pulling from") {
		return nil
	}
	switch {
	case m.Status == "Pulling fs layer", m.Status == "Waiting", m.Status == "Already exists",
		strings.HasPrefix(m.Status, "Downloading"), m.Status == "Verifying Checksum",
		m.Status == "Download complete", strings.HasPrefix(m.Status, "Extracting"),
		m.Status == "Pull complete", m.Status == "Retrying":
	default:
		return nil
	}
	l, ok := t.layers[m.ID]
	if !ok {
		l = &layerProgress{}
		t.layers[m.ID] = l
		t.order = append(t.order, m.ID)
	}
	return l
}

func (t *pullTracker) snapshot() PullProgress {
	p := PullProgress{Ref: t.ref, Status: t.status, Layers: len(t.layers)}
	for _, l := range t.layers {
		if l.done {
			p.LayersDone++
		}
		p.BytesDone += l.current
		p.BytesTotal += l.total
	}
	return p
}
