package main

import (
	"cmp"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// newDescribe is `describe NAME`: services, conditions and recent events in one view.
func newDescribe(c clients, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a Sandbox's services, conditions and recent events in one view",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, sb, err := c.get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			core, err := c.core()
			if err != nil {
				return err
			}
			events, err := core.CoreV1().Events(sb.Namespace).List(cmd.Context(), metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(sb.UID)).String()})
			if err != nil {
				return err
			}
			return describe(streams.Out, sb, events.Items)
		},
	}
}

func describe(out io.Writer, sb *sandboxv1.Sandbox, events []corev1.Event) error {
	w := newLines(out)
	w.f("Name:\t%s\nNamespace:\t%s\nAgent:\t%s\nSecret:\t%s\nAge:\t%s\n", sb.Name, sb.Namespace, sb.Spec.AgentID,
		sandboxv1.SecretName(sb), age(sb.CreationTimestamp))
	if h := sb.Status.DockerHost; h != nil {
		w.f("Docker host:\t%s\n", h.ID)
	}
	w.f("Generation:\t%d (status describes %d)\n", sb.Generation, sb.Status.ObservedGeneration)
	w.f("\nServices:\n  ENGINE\tVERSION\tCONTAINER\tENDPOINT\tREADY\tRESTARTS\tFEATURES\n")
	for _, s := range sb.Status.Services {
		w.f("  %s\t%s\t%s\t%s:%d\t%t\t%d\t%v\n", s.Engine, cmp.Or(s.Version, "-"), s.ContainerName, s.Host, s.Port, s.Ready, s.Restarts, s.Features)
	}
	if len(sb.Status.Checkpoints) > 0 {
		w.f("\nCheckpoints:\n")
		checkpointRows(w, "  ", sb.Status.Checkpoints)
	}
	w.f("\nConditions:\n  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE\n")
	for _, c := range sb.Status.Conditions {
		w.f("  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime), c.Message)
	}
	slices.SortFunc(events, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	if len(events) > 10 {
		events = events[len(events)-10:]
	}
	w.f("\nEvents:\n  TYPE\tREASON\tAGE\tMESSAGE\n")
	for _, e := range events {
		w.f("  %s\t%s\t%s\t%s\n", e.Type, e.Reason, age(metav1.NewTime(eventTime(e))), e.Message)
	}
	return w.flush()
}

// eventTime is when an event last happened, whichever API recorded it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.LastTimestamp.Time
}
