package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// explain rewrites pflag's parse errors to say what a flag allows, and suggests
// the flag meant when a name is unknown.
func (f *flags) explain(err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var missing *pflag.ValueRequiredError
	switch {
	case errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() != "":
		// A single-dash long flag (-leader-elect) reaches pflag as shorthands.
		arg := notExist.GetSpecifiedShortnames()
		name, _, _ := strings.Cut(arg, "=")
		msg := "unknown flag -" + arg + ": flags take two dashes"
		if f.Lookup(name) != nil {
			msg += " (--" + arg + ")"
		}
		return errors.New(msg)
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		msg := "unknown flag --" + name
		if near := f.nearest(name); near != "" {
			msg += " (did you mean --" + near + "?)"
		}
		return errors.New(msg)
	case errors.As(err, &invalid):
		want := wantFor(invalid.GetFlag())
		if want == "" {
			want = errors.Unwrap(err).Error()
		}
		return fmt.Errorf("--%s %q: %s", invalid.GetFlag().Name, invalid.GetValue(), want)
	case errors.As(err, &missing):
		msg := "--" + missing.GetFlag().Name + " needs a value"
		if want := wantFor(missing.GetFlag()); want != "" {
			msg += ": " + want
		}
		return errors.New(msg)
	}
	return err
}

// wantFor says what a flag's type allows ("" when its own errors say it).
func wantFor(fl *pflag.Flag) string {
	return map[string]string{
		"duration": "want a duration such as 30s or 5m",
		"quantity": "want a quantity such as 512Mi, 2Gi, 1 or 500m",
		"int":      "want a whole number",
		"int64":    "want a whole number",
		"bool":     "want true or false",
	}[fl.Value.Type()]
}

// nearest is the defined flag closest to name, if it is close.
func (f *flags) nearest(name string) string {
	best, bestDist := "", len(name)/3+2
	f.VisitAll(func(fl *pflag.Flag) {
		if d := editDistance(name, fl.Name); d < bestDist {
			best, bestDist = fl.Name, d
		}
	})
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
