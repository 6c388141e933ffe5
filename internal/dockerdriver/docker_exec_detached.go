package dockerdriver

import (
	"context"
	"errors"

	"github.com/moby/moby/client"
)

// ExecDetached: see Driver. Docker runs a detached exec with no stream to
// read, so nothing here waits for it; it is not a left exec either (see
// leftExecs): the caller meant it to run on, and watches its end otherwise.
func (d *Docker) ExecDetached(ctx context.Context, nameOrID string, spec ExecSpec) (string, error) {
	ref := ExecRef(nameOrID, spec.Cmd)
	if nameOrID == "" || len(spec.Cmd) == 0 {
		return "", NewError("exec", ref, ErrInvalid, errors.New("need a container and a command"))
	}
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	fail := func(err error) (string, error) { return "", expired(wrap("exec", ref, err), "exec", ref) }
	created, err := d.cli.ExecCreate(ctx, nameOrID, client.ExecCreateOptions{Cmd: spec.Cmd, Env: envList(spec.Env)})
	if err != nil {
		return fail(err)
	}
	if _, err := d.cli.ExecStart(ctx, created.ID, client.ExecStartOptions{Detach: true}); err != nil {
		return fail(err)
	}
	return created.ID, nil
}
