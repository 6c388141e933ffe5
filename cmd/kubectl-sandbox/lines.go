package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// lines writes aligned output and keeps the first write error for flush, so a
// closed pipe ends the command with an error instead of being ignored.
type lines struct {
	w   *tabwriter.Writer
	err error
}

func newLines(out io.Writer) *lines { return &lines{w: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)} }

func (l *lines) f(format string, a ...any) {
	if l.err == nil {
		_, l.err = fmt.Fprintf(l.w, format, a...)
	}
}

func (l *lines) flush() error {
	if l.err != nil {
		return l.err
	}
	return l.w.Flush()
}
