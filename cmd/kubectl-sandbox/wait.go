package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/roboco-sandbox/sandbox-controller/api/wait"
)

// newWait is `wait NAME`: until Ready for its current spec; fails when Stalled.
func newWait(c clients, streams genericiooptions.IOStreams) *cobra.Command {
	timeout := 5 * time.Minute
	cmd := &cobra.Command{
		Use:   "wait NAME",
		Short: "Wait until a Sandbox is Ready for its current spec (fails at once when it is Stalled)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, sb, err := c.get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if sb, err = wait.Ready(ctx, cs, sb); err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "sandbox/%s is Ready; credentials in Secret %s\n", sb.Name, sb.Status.SecretName)
			return err
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait")
	return cmd
}
