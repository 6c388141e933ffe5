package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/roboco-sandbox/sandbox-controller/controllers"
)

// parseSettings parses args into settings and validates them. env reads the
// environment (os.Getenv outside tests). On -h/--help it writes the help to
// stdout and returns flag.ErrHelp.
func parseSettings(args []string, env func(string) string, stdout io.Writer) (*settings, error) {
	s := &settings{options: controllers.DefaultOptions()}
	f := newFlags(s, env)
	if err := f.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			f.printHelp(stdout)
			return nil, flag.ErrHelp // the sentinel main checks
		}
		return nil, f.explain(err)
	}
	if f.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: the manager takes flags only", f.Arg(0))
	}
	for _, apply := range f.apply {
		apply()
	}
	versions, err := parseVersions(s.versions)
	if err != nil {
		return nil, err
	}
	s.options.Versions = versions
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}
