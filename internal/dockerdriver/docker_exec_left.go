package dockerdriver

import (
	"context"
	"maps"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// leftExecs remembers, per container, the last exec its caller stopped waiting for
// before it ended (it timed out): Docker cannot stop an exec, so it may still run,
// and the next exec there is refused as busy until it ends (Exec).
//
// The key is the container reference as the caller passed it. The controller
// passes IDs (host.Probe, Activate, Rotate): an ID follows a container across the
// rename that claims a pool member, whose left exec moves with it, and a new
// container made under the same name does not inherit it. A caller that named one
// container by name and by ID in turn would not be guarded.
type leftExecs struct {
	mu sync.Mutex
	m  map[string]leftExec
	// pruneAt is the size at which the finished ones are looked for: an entry is
	// forgotten by the next exec into its container, and a container that is
	// never exec'd again (removed out of band) would otherwise stay.
	pruneAt int
	pruning bool
}

type leftExec struct {
	id      string
	program string // the command's first word
	why     string // how its caller left it: "timed out after 10s"
}

const leftExecsPruneMin = 64

func (l *leftExecs) get(key string) (leftExec, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	return e, ok
}

// forget drops key's entry if it is still exec id ("": whichever).
func (l *leftExecs) forget(key, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[key]; ok && (id == "" || e.id == id) {
		delete(l.m, key)
	}
}

// refuseBusy returns the busy error while the exec last left in nameOrID still
// runs, and forgets it once it has ended or is gone (with its container).
func (d *Docker) refuseBusy(ctx context.Context, nameOrID, ref string) error {
	e, ok := d.left.get(nameOrID)
	if !ok {
		return nil
	}
	ins, err := d.cli.ExecInspect(ctx, e.id, client.ExecInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
	case err != nil:
		return wrap("exec", ref, err)
	case ins.Running:
		return BusyError(ref, nameOrID, e.program, e.why)
	}
	d.left.forget(nameOrID, e.id)
	return nil
}

// leave remembers exec id in nameOrID, which its caller stopped waiting for;
// when there are many, it forgets those that ended, in the background.
func (d *Docker) leave(nameOrID string, e leftExec) {
	l := &d.left
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]leftExec{}
	}
	l.m[nameOrID] = e
	if len(l.m) < max(l.pruneAt, leftExecsPruneMin) || l.pruning {
		return
	}
	l.pruning = true
	go d.pruneLeft()
}

// pruneLeft forgets the left execs that ended or are gone, within one call
// budget; what remains still runs, and the next prune waits for twice as many.
func (d *Docker) pruneLeft() {
	ctx, cancel := context.WithTimeout(d.base, d.opts.callTimeout)
	defer cancel()
	l := &d.left
	l.mu.Lock()
	entries := maps.Clone(l.m)
	l.mu.Unlock()
	for key, e := range entries {
		ins, err := d.cli.ExecInspect(ctx, e.id, client.ExecInspectOptions{})
		if cerrdefs.IsNotFound(err) || err == nil && !ins.Running {
			l.forget(key, e.id)
		} else if ctx.Err() != nil {
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneAt, l.pruning = 2*len(l.m), false
}
