// Command orchestrator is what an agent platform does with the Sandbox API, end to
// end: it applies a Sandbox (server-side apply, typed client), waits until it is
// Ready (surviving dropped watches), reads its Secret, runs the agent as a Docker
// container with those variables, and deletes the Sandbox when the agent is done.
//
//	orchestrator --namespace agents --agent be-dev-1 --engines postgres,redis \
//	    --network agents-net --image my-agent:latest -- ./run-tests.sh
//
// It needs only the API module (github.com/roboco-sandbox/sandbox-controller/api)
// and client-go; the agent runs through the docker CLI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	applyv1 "github.com/roboco-sandbox/sandbox-controller/api/client/applyconfiguration/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/api/client/clientset/versioned"
	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/api/wait"
)

type options struct {
	kubeconfig, namespace, agent, engines, network, image string
	timeout, grace                                        time.Duration
	keep                                                  bool
	command                                               []string
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the Sandbox")
	flag.StringVar(&o.agent, "agent", "", "agent ID: names the Sandbox, its containers and the agent container (required)")
	flag.StringVar(&o.engines, "engines", "postgres", "comma-separated services: postgres, redis, mongo")
	flag.StringVar(&o.network, "network", "", "Docker network of the Sandbox and the agent (default: the manager's)")
	flag.StringVar(&o.image, "image", "", "the agent's image (required)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for Ready")
	flag.DurationVar(&o.grace, "grace", 2*time.Minute, "how long the agent container may be missing (it starts once the Sandbox is Ready) before the Sandbox is torn down")
	flag.BoolVar(&o.keep, "keep", false, "keep the Sandbox after the agent exits")
	flag.Parse()
	o.command = flag.Args()
	if o.agent == "" || o.image == "" {
		fmt.Fprintln(os.Stderr, "orchestrator: --agent and --image are required")
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orchestrator:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// run returns the agent's exit code.
func run(ctx context.Context, o options) (int, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return 0, err
	}
	cs := versioned.NewForConfigOrDie(cfg)
	sandboxes := cs.SandboxV1alpha1().Sandboxes(o.namespace)
	core := kubernetes.NewForConfigOrDie(cfg)

	sb, err := sandboxes.Apply(ctx, sandboxFor(o), metav1.ApplyOptions{FieldManager: "orchestrator", Force: true})
	if err != nil {
		return 0, fmt.Errorf("applying Sandbox %s/%s: %w", o.namespace, o.agent, err)
	}
	if !o.keep {
		defer deleteSandbox(sandboxes, o)
	}
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if sb, err = wait.Ready(wctx, cs, sb); err != nil {
		return 0, err
	}
	secret, err := core.CoreV1().Secrets(o.namespace).Get(ctx, sandboxv1.SecretName(sb), metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("reading the Sandbox's Secret: %w", err)
	}
	fmt.Fprintf(os.Stderr, "orchestrator: Sandbox %s Ready (%s); starting the agent\n", sb.Name, sb.Status.Engines)
	return runAgent(ctx, o, secret.Data)
}

// sandboxFor is the Sandbox this orchestrator owns: every field it sets is its own
// under server-side apply. The agent container is the Sandbox's owner, so a
// crashed orchestrator leaves nothing behind for long; the grace covers the wait
// for Ready, before the agent exists.
func sandboxFor(o options) *applyv1.SandboxApplyConfiguration {
	spec := applyv1.SandboxSpec().WithAgentID(o.agent).WithOwner(applyv1.OwnerSpec().
		WithContainerName(agentContainer(o)).WithGracePeriod(metav1.Duration{Duration: o.grace}))
	for e := range strings.SplitSeq(o.engines, ",") {
		spec.WithServices(applyv1.ServiceSpec().WithEngine(sandboxv1.Engine(strings.TrimSpace(e))))
	}
	if o.network != "" {
		spec.WithNetwork(o.network)
	}
	return applyv1.Sandbox(o.agent, o.namespace).WithSpec(spec)
}

// runAgent runs the agent with the Secret's variables. They reach docker through
// its environment (-e NAME without a value), never its command line.
func runAgent(ctx context.Context, o options, data map[string][]byte) (int, error) {
	args := []string{"run", "--rm", "--name", agentContainer(o)}
	if o.network != "" {
		args = append(args, "--network", o.network)
	}
	env := os.Environ()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		args = append(args, "-e", k)
		env = append(env, k+"="+string(data[k]))
	}
	cmd := exec.CommandContext(ctx, "docker", append(append(args, o.image), o.command...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
	err := cmd.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// agentContainer is the agent's container name, upstream's roboco-agent-<agentID>.
func agentContainer(o options) string { return "roboco-agent-" + o.agent }
