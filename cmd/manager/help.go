package main

import (
	"io"
	"regexp"
	"strings"

	cliflag "k8s.io/component-base/cli/flag"
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

Flags are written --name=value or --name value (two dashes); a boolean flag
alone (--sweep) is true, --sweep=false turns it off.
`

const helpFooter = `Endpoints:
  /metrics   on --metrics-bind-address: controller-runtime's metrics (work
             queues, reconciles, API client) and the sandbox_* metrics: time to
             Ready per engine, image pull times, probe attempts, failures by
             reason, Sandboxes by Ready status. Plain HTTP, or with
             --metrics-secure HTTPS for bearer tokens allowed to get /metrics.
  /healthz   on --health-probe-bind-address: answers while the process runs
             and every controller's workers take work; fails when items wait
             and no worker took one for 3m (/healthz/workers says which).
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

// helpColumns is the width --help wraps to.
const helpColumns = 80

var trailingSpace = regexp.MustCompile(`(?m)[ \t]+$`)

// printHelp writes --help: the header, each group (component-base's
// PrintSections lays out the flags, defaults included), the footer.
func (f *flags) printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(helpHeader)
	for _, title := range f.groups.Order {
		var section strings.Builder
		cliflag.PrintSections(&section, cliflag.NamedFlagSets{Order: []string{title}, FlagSets: f.groups.FlagSets}, helpColumns)
		// Note: PrintSections titles a section "<name> flags:" and pads each flag
		// line to its usage column; the title here is this manager's, followed by
		// the group's intro, and padding at a line's end is dropped.
		text, ours := strings.CutPrefix(section.String(), "\n"+title+" flags:\n\n")
		if ours {
			text = "\n" + title + ":\n" + f.intros[title] + text
		}
		b.WriteString(trailingSpace.ReplaceAllString(text, ""))
	}
	b.WriteString("\n" + helpFooter)
	_, _ = io.WriteString(w, b.String())
}
