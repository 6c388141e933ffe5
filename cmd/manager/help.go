package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

const helpHeader = `manager runs the sandbox controller.

It watches Sandbox objects (sandbox.roboco.io/v1alpha1, every namespace) and
runs each Sandbox's Postgres, Redis and Mongo services as containers on one
Docker host: it pulls the operator's images, starts the containers (tmpfs data,
memory and CPU caps, no published ports), waits until each answers its probe,
publishes the credentials in a Secret named <sandbox>-sandbox, and reports
progress as status conditions. Deleting a Sandbox removes its containers.

Stopping the manager (SIGTERM or SIGINT) never removes sandbox containers: they
keep running, and a restarted manager adopts them with their original
credentials.

Usage:
  manager [flags]

Flags are written --name=value or --name value (a single dash works too).
`

const helpFooter = `Endpoints:
  /metrics   on --metrics-bind-address: controller-runtime's metrics (work
             queues, reconciles, API client) and the sandbox_* metrics: time to
             Ready per engine, image pull times, probe attempts, failures by
             reason, Sandboxes by Ready status.
  /healthz   on --health-probe-bind-address: answers while the process runs.
  /readyz    on --health-probe-bind-address: fails while Docker does not answer
             a ping within a few seconds.

Environment:
  DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION
             the Docker client's usual settings (--docker-host wins over
             DOCKER_HOST). The API version is negotiated unless pinned.
  KUBECONFIG the cluster to talk to when --kubeconfig is not given; inside a Pod
             the service account is used.

Exit status: 0 after a clean stop, 1 when start-up or the manager fails, 2 for a
bad flag.
`

// printHelp writes --help: the header, every flag by group with its default, the footer.
func (fs *flagSet) printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(helpHeader)
	printed := map[string]bool{}
	for _, g := range fs.groups {
		var names []string
		for _, pattern := range g.flags {
			if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
				fs.VisitAll(func(f *flag.Flag) {
					if strings.HasPrefix(f.Name, prefix) {
						names = append(names, f.Name)
					}
				})
				continue
			}
			names = append(names, pattern)
		}
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		if g.intro != "" {
			wrap(&b, g.intro, "  ")
		}
		for _, name := range names {
			if f := fs.Lookup(name); f != nil && !printed[name] {
				fs.printFlag(&b, f)
				printed[name] = true
			}
		}
	}
	// Note: a flag added without a group still shows, so --help cannot lose one.
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !printed[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		b.WriteString("\nOther:\n")
		for _, f := range rest {
			fs.printFlag(&b, f)
		}
	}
	b.WriteString("\n")
	b.WriteString(helpFooter)
	_, _ = io.WriteString(w, b.String())
}

func (fs *flagSet) printFlag(b *strings.Builder, f *flag.Flag) {
	arg, known := fs.argName[f.Name]
	if !known {
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); !isBool {
			arg, _ = flag.UnquoteUsage(f)
		}
	}
	fmt.Fprintf(b, "  --%s", f.Name)
	if arg != "" {
		fmt.Fprintf(b, " %s", arg)
	}
	b.WriteString("\n")
	usage := f.Usage
	if f.DefValue != "" && !strings.Contains(usage, "(default ") && !strings.Contains(usage, "Default: ") {
		if _, isString := fs.argName[f.Name]; isString && strings.ContainsAny(f.DefValue, " {}") {
			usage += " " + unbreakable(fmt.Sprintf("(default %q)", f.DefValue))
		} else {
			usage += " " + unbreakable(fmt.Sprintf("(default %s)", f.DefValue))
		}
	}
	wrap(b, usage, "      ")
}

// nbsp stands for a space that wrap must not break at.
const nbsp = "\x1f"

// unbreakable keeps s on one line when wrapped.
func unbreakable(s string) string { return strings.ReplaceAll(s, " ", nbsp) }

// wrap writes text as lines of at most 80 columns, each starting with indent.
func wrap(b *strings.Builder, text, indent string) {
	line := indent
	for _, word := range strings.Split(strings.Join(strings.Fields(text), " "), " ") {
		word = strings.ReplaceAll(word, nbsp, " ")
		if len(line) > len(indent) && len(line)+1+len(word) > 80 {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		b.WriteString(line + "\n")
	}
}
