package main

import (
	"github.com/spf13/pflag"

	"github.com/roboco-sandbox/sandbox-controller/internal/lanes"
)

// addDataFlags adds, to the Docker group, the bounds of what runs in the
// service containers: init scripts, their lanes and checkpoints.
func addDataFlags(fs *pflag.FlagSet, s *settings) {
	fs.DurationVar(&s.options.InitScriptTimeout, "init-script-timeout", s.options.InitScriptTimeout,
		"The longest one init script of a service (spec.services[].init) may run; past it, it is killed and the service fails with InitFailed.")
	fs.Int64Var(&s.options.InitMaxBytes, "init-max-bytes", s.options.InitMaxBytes,
		"The most bytes of init scripts one service may run, together; more fails the service with InitFailed, naming the size.")
	fs.IntVar(&s.options.InitMaxScripts, "init-max-scripts", s.options.InitMaxScripts,
		"The most keys one ConfigMap or Secret of init scripts may hold; more fails its services with InitFailed, naming the count.")
	fs.DurationVar(&s.options.InitMaxTimeout, "init-max-timeout", s.options.InitMaxTimeout,
		"The longest total time a service's seed may ask for (spec.services[].init.timeout, whose default is 10m or this when lower); "+
			"a longer one fails the service with InitFailed, naming this flag.")
	fs.IntVar(&s.options.MaxCheckpoints, "max-checkpoints", s.options.MaxCheckpoints,
		"The most named checkpoints one service may keep, and its default (spec.services[].maxCheckpoints asks for fewer); "+
			"a Checkpoint of a new name past it fails, naming the limit.")
	fs.IntVar(&s.options.SeedLanes, lanes.PerHostFlag, lanes.DefaultPerHost,
		"The most seeds (init scripts) running at once on one Docker host; more wait, their status saying where, namespaces taking turns. "+
			"Data operations and rotations never wait for a lane.")
	fs.IntVar(&s.options.SeedLanesPerNamespace, lanes.PerNamespaceFlag, lanes.DefaultPerNamespace,
		"The most seeds one namespace runs at once on one Docker host (at most --"+lanes.PerHostFlag+").")
}
