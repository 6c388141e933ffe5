package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// newCheckpoints is `checkpoints NAME`: the Sandbox's checkpoints (its
// status.checkpoints) as a table, or -o json.
func newCheckpoints(c clients, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "checkpoints NAME",
		Short: "List a Sandbox's checkpoints: each name, the services holding one, when it was taken and its size",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("-o %q: must be json (or unset, for a table)", output)
			}
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			cs, err := c.sandboxes()
			if err != nil {
				return err
			}
			sb, err := cs.SandboxV1alpha1().Sandboxes(ns).Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			list := sb.Status.Checkpoints
			if output == "json" {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				if list == nil {
					return enc.Encode([]any{})
				}
				return enc.Encode(list)
			}
			w := newLines(streams.Out)
			checkpointRows(w, "", list)
			return w.flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: status.checkpoints as JSON")
	return cmd
}

// checkpointRows writes list as a table, each line after indent.
func checkpointRows(w *lines, indent string, list []sandboxv1.SandboxCheckpoint) {
	w.f("%sNAME\tSERVICES\tTAKEN\tSIZE\n", indent)
	for _, ck := range list {
		services := make([]string, 0, len(ck.Services))
		for _, e := range ck.Services {
			services = append(services, string(e))
		}
		w.f("%s%s\t%s\t%s ago\t%s\n", indent, ck.Name, strings.Join(services, ","),
			duration.HumanDuration(time.Since(ck.Time.Time)), humanBytes(ck.SizeBytes))
	}
}

// humanBytes is n in B, KiB, MiB or GiB, one decimal past KiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%dB", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
}
