package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	typed "github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/typed/api/v1alpha1"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/api/wait"
)

// dataVerb is one of reset, checkpoint, restore and delete-checkpoint: its
// action, the word for a service that did it, and how it takes --name (not
// at all, latest by default, or required).
type dataVerb struct {
	action          sandboxv1.DataAction
	use, done       string
	short           string
	named, mustName bool
}

var dataVerbs = []dataVerb{
	{sandboxv1.DataReset, "reset", "reset", "Reset a Sandbox's data to its initial state (as its init scripts left it, or empty)", false, false},
	{sandboxv1.DataCheckpoint, "checkpoint", "checkpointed", "Record a Sandbox's current data as a checkpoint of a name (--name, default latest), replacing one of that name", true, false},
	{sandboxv1.DataRestore, "restore", "restored", "Restore a Sandbox's data to its checkpoint of a name (--name, default latest)", true, false},
	{sandboxv1.DataDeleteCheckpoint, "delete-checkpoint", "deleted", "Delete a Sandbox's checkpoint of a name (--name), and the memory it took", true, true},
}

// engines are the --service values a Sandbox can name.
var engines = []sandboxv1.Engine{sandboxv1.EnginePostgres, sandboxv1.EngineRedis, sandboxv1.EngineMongo}

// newData is `reset|checkpoint|restore|delete-checkpoint NAME`: writes
// spec.data with a fresh id, waits for status.data to finish it, and prints
// what each service did.
func newData(c clients, streams genericiooptions.IOStreams, v dataVerb) *cobra.Command {
	timeout := 60 * time.Second
	var services []string
	var checkpoint string
	cmd := &cobra.Command{
		Use:   v.use + " NAME",
		Short: v.short,
		Long: v.short + `.

Writes spec.data with a fresh id, waits until status.data says every service
named is done, and prints what each did. Exits 1 when a service failed it (in
the engine's words) or on --timeout (saying what it still waits for).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			named, err := parseEngines(services)
			if err != nil {
				return err
			}
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			cs, err := c.sandboxes()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			sandboxes := cs.SandboxV1alpha1().Sandboxes(ns)
			req := sandboxv1.DataRequest{ID: newDataID(v.action), Action: v.action, Services: named, Name: checkpoint}
			sb, err := requestData(ctx, sandboxes, args[0], req)
			if err != nil {
				return err
			}
			sb, err = wait.Data(ctx, cs, sb, req.ID)
			if err != nil && ctx.Err() != nil { // Note: the informer says "timed out waiting for the condition"
				err = fmt.Errorf("timed out after %ss: %s", strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64), awaited(sb, req.ID))
			}
			return report(streams.Out, sb, req, v, err)
		},
	}
	cmd.Flags().StringSliceVar(&services, "service", nil,
		"only these engines of the Sandbox: postgres, redis or mongo (repeat or comma-separate); default every service")
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for every service named to finish")
	if v.named {
		cmd.Flags().StringVar(&checkpoint, "name", "", "the checkpoint's name: lowercase letters, digits and '-' (default latest)")
	}
	if v.mustName {
		_ = cmd.MarkFlagRequired("name") // the flag was just added
	}
	return cmd
}

// parseEngines checks --service here, so a typo fails with the choices.
func parseEngines(names []string) ([]sandboxv1.Engine, error) {
	var out []sandboxv1.Engine
	for _, n := range names {
		e := sandboxv1.Engine(strings.TrimSpace(n))
		if !slices.Contains(engines, e) {
			return nil, fmt.Errorf("--service %q: must be postgres, redis or mongo", n)
		}
		if !slices.Contains(out, e) { // spec.data.services is a set
			out = append(out, e)
		}
	}
	return out, nil
}

// newDataID is a fresh request id, since the controller does each id once:
// the action, the time and a random suffix, for two runs in one millisecond.
func newDataID(a sandboxv1.DataAction) string {
	return fmt.Sprintf("%s-%d-%s", strings.ToLower(string(a)), time.Now().UnixMilli(), strings.ToLower(rand.Text()[:6]))
}

// requestData writes spec.data in one merge patch. services and name are
// written even when unset: null drops an earlier request's, which a merge
// patch would otherwise keep.
func requestData(ctx context.Context, sandboxes typed.SandboxInterface, name string, req sandboxv1.DataRequest) (*sandboxv1.Sandbox, error) {
	var services, checkpoint any
	if len(req.Services) > 0 {
		services = req.Services
	}
	if req.Name != "" {
		checkpoint = req.Name
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"data": map[string]any{
		"id": req.ID, "action": req.Action, "services": services, "name": checkpoint}}})
	if err != nil {
		return nil, err
	}
	return sandboxes.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
}

// awaited is what status.data says the request still waits for.
func awaited(sb *sandboxv1.Sandbox, id string) string {
	if d := sb.Status.Data; d != nil && d.ID == id && d.Message != "" {
		return d.Message
	}
	return "the controller has not taken up " + id + " yet (is it running?)"
}

// report prints a line for each service that finished the request, then the
// outcome: a summary line when it succeeded, else an error naming what failed
// in the engine's words, or waitErr.
func report(out io.Writer, sb *sandboxv1.Sandbox, req sandboxv1.DataRequest, v dataVerb, waitErr error) error {
	failed, err := serviceLines(out, sb, req.ID, v)
	switch {
	case err != nil:
		return err
	case waitErr != nil:
		return waitErr
	case sb.Status.Data.Phase == sandboxv1.DataFailed:
		why := cmp.Or(strings.Join(failed, "; "), sb.Status.Data.Message)
		return fmt.Errorf("sandbox/%s: %s %s failed on %s", sb.Name, v.use, req.ID, why)
	}
	of := ""
	if req.Name != "" {
		of = " checkpoint " + req.Name
	}
	_, err = fmt.Fprintf(out, "sandbox/%s %s%s (request %s)\n", sb.Name, v.done, of, req.ID)
	return err
}

// serviceLines prints what each service did for request id: how long it took
// and in which container, or FAILED and the engine's words (returned too).
func serviceLines(out io.Writer, sb *sandboxv1.Sandbox, id string, v dataVerb) (failed []string, err error) {
	w := newLines(out)
	for _, s := range sb.Status.Services {
		d := s.Data
		switch {
		case d == nil || d.RequestID != id:
		case d.Error != "":
			w.f("%s\tFAILED\t%s\n", s.Engine, d.Error)
			failed = append(failed, fmt.Sprintf("%s: %s", s.Engine, d.Error))
		default:
			took := "done"
			if op := lastOp(d, v.action); op != nil && op.ID == id {
				took = fmt.Sprintf("in %dms", op.DurationMilliseconds)
			}
			w.f("%s\t%s\t%s\t(container %s)\n", s.Engine, v.done, took, s.ContainerName)
		}
	}
	return failed, w.flush()
}

// lastOp is the service's last operation of this action.
func lastOp(d *sandboxv1.ServiceData, a sandboxv1.DataAction) *sandboxv1.DataOperation {
	switch a {
	case sandboxv1.DataReset:
		return d.LastReset
	case sandboxv1.DataCheckpoint:
		return d.LastCheckpoint
	case sandboxv1.DataRestore:
		return d.LastRestore
	}
	return nil
}
