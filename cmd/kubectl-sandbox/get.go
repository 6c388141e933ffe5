package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned/scheme"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// newGet is `get [NAME]` (and `list`): a table with each service's state, or -o.
func newGet(c clients, streams genericiooptions.IOStreams, use string) *cobra.Command {
	print := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)
	var all bool
	cmd := &cobra.Command{
		Use:   use + " [NAME]",
		Short: "List Sandboxes (or show one) with the state of each service",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			if all {
				ns = metav1.NamespaceAll
			}
			cs, err := c.sandboxes()
			if err != nil {
				return err
			}
			list, err := cs.SandboxV1alpha1().Sandboxes(ns).List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			items := list.Items
			if len(args) == 1 {
				items = filterName(items, args[0])
				if len(items) == 0 {
					return fmt.Errorf("sandbox %q not found in namespace %q", args[0], ns)
				}
			}
			if print.OutputFormat != nil && *print.OutputFormat != "" {
				printer, err := print.ToPrinter()
				if err != nil {
					return err
				}
				list.Items = items
				if len(args) == 1 {
					return printer.PrintObj(&items[0], streams.Out)
				}
				return printer.PrintObj(list, streams.Out)
			}
			return table(streams, items, all)
		},
	}
	print.AddFlags(cmd)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list Sandboxes in every namespace")
	return cmd
}

func filterName(items []sandboxv1.Sandbox, name string) []sandboxv1.Sandbox {
	for _, sb := range items {
		if sb.Name == name {
			return []sandboxv1.Sandbox{sb}
		}
	}
	return nil
}

func table(streams genericiooptions.IOStreams, items []sandboxv1.Sandbox, withNamespace bool) error {
	w := newLines(streams.Out)
	head := "NAME\tAGENT\tREADY\tREASON\tSERVICES\tAGE"
	if withNamespace {
		head = "NAMESPACE\t" + head
	}
	w.f("%s\n", head)
	for i := range items {
		sb := &items[i]
		ready, reason := "Unknown", ""
		if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c != nil {
			ready, reason = string(c.Status), c.Reason
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", sb.Name, sb.Spec.AgentID, ready, reason, services(sb), age(sb.CreationTimestamp))
		if withNamespace {
			row = sb.Namespace + "\t" + row
		}
		w.f("%s\n", row)
	}
	return w.flush()
}

// services is each service's state: engine:ready, engine:starting, with restarts.
func services(sb *sandboxv1.Sandbox) string {
	var out []string
	for _, spec := range sb.Spec.Services {
		state := "pending"
		for _, st := range sb.Status.Services {
			if st.Engine != spec.Engine {
				continue
			}
			state = "starting"
			if st.Ready {
				state = "ready"
			}
			if st.Restarts > 0 {
				state += fmt.Sprintf("(%d restarts)", st.Restarts)
			}
		}
		out = append(out, string(spec.Engine)+":"+state)
	}
	return strings.Join(out, ",")
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
