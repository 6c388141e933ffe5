// Command kubectl-sandbox is a kubectl plugin for Sandboxes: `kubectl sandbox
// get|list|describe|wait|env|reset|checkpoint|restore`. It follows kubectl's
// conventions (cli-runtime's kubeconfig flags, -n/--namespace, -o for machine
// output).
//
//	go install ./cmd/kubectl-sandbox   # from a checkout; then: kubectl sandbox --help
package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func main() {
	cmd := newRoot(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// clients are what every subcommand talks to, from the kubeconfig flags.
type clients struct {
	flags *genericclioptions.ConfigFlags
}

func (c clients) namespace() (string, error) {
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

func (c clients) sandboxes() (*versioned.Clientset, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfig(cfg)
}

// get reads one Sandbox of the current namespace, with the clientset it came from.
func (c clients) get(ctx context.Context, name string) (*versioned.Clientset, *sandboxv1.Sandbox, error) {
	ns, err := c.namespace()
	if err != nil {
		return nil, nil, err
	}
	cs, err := c.sandboxes()
	if err != nil {
		return nil, nil, err
	}
	sb, err := cs.SandboxV1alpha1().Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
	return cs, sb, err
}

func (c clients) core() (*kubernetes.Clientset, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

func newRoot(streams genericiooptions.IOStreams) *cobra.Command {
	c := clients{flags: genericclioptions.NewConfigFlags(true)}
	root := &cobra.Command{
		Use:   "kubectl-sandbox",
		Short: "Work with Sandboxes: throwaway Postgres, Redis and Mongo for AI agents",
		Long: `kubectl sandbox shows Sandboxes with the state of each service, waits for them,
prints their credentials for a shell or a .env file, and resets, checkpoints
and restores their data (reset|checkpoint|restore NAME [--service ENGINE]...).`,
		SilenceUsage: true,
	}
	c.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newGet(c, streams, "get"), newGet(c, streams, "list"), newDescribe(c, streams),
		newWait(c, streams), newEnv(c, streams), newCheckpoints(c, streams))
	for _, v := range dataVerbs {
		root.AddCommand(newData(c, streams, v))
	}
	return root
}
