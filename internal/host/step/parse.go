package step

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Bounds of the untrusted text a state carries, in runes.
const (
	maxProgress = 200
	maxMessage  = 512
	// MaxOut is the most of its output a Done step answers (Step.Output):
	// its hex fits a state read's output limit with room to spare. The
	// container prints a byte more, which tells a whole output from a tail.
	MaxOut = 3072
)

// record is what observe printed, line by line.
type record struct {
	absent, running, lost, cancelled bool
	ended                            bool
	exit                             int
	started, end, now, progressed    int64
	progress, out                    string
}

// parse reads observe's lines into a State.
func parse(stdout string) (State, error) {
	var r record
	seen := false
	for _, line := range strings.Split(stdout, "\n") {
		word, rest, _ := strings.Cut(line, " ")
		ok, err := r.take(word, rest)
		if err != nil {
			return State{}, err
		}
		seen = seen || ok
	}
	if !seen {
		return State{}, fmt.Errorf("the container printed no step state: %q", clean(stdout, 80))
	}
	return r.state(), nil
}

// take reads one line; ok says it was a phase line.
func (r *record) take(word, rest string) (ok bool, err error) {
	switch word {
	case "absent":
		r.absent = true
	case "running":
		r.running = true
	case "lost":
		r.lost = true
	case "exit":
		r.ended = true
		code, end, _ := strings.Cut(rest, " ")
		r.exit, err = strconv.Atoi(code)
		r.end, _ = strconv.ParseInt(end, 10, 64)
	case "cancelled":
		r.cancelled = true
		return false, nil
	case "started", "now", "progressed":
		n, _ := strconv.ParseInt(rest, 10, 64) // missing while the runner starts: 0
		switch word {
		case "now":
			r.now = n
		case "started":
			r.started = n
		default:
			r.progressed = n
		}
		return false, nil
	case "progress", "out":
		b, herr := hex.DecodeString(rest)
		if word == "out" {
			r.out = string(b)
		} else {
			r.progress = string(b)
		}
		return false, herr
	default:
		return false, nil
	}
	return true, err
}

func (r record) state() State {
	st := State{Progress: clean(lastLine(r.progress), maxProgress)}
	if r.started > 0 {
		st.Elapsed = time.Duration(max(0, r.now-r.started)) * time.Second
	}
	if r.progressed > 0 && st.Progress != "" {
		st.ProgressFor = time.Duration(max(0, r.now-r.progressed)) * time.Second
	}
	switch {
	case r.absent:
		return State{Phase: Absent}
	case r.running:
		st.Phase = Running
	case r.ended && r.exit == 0:
		st.Phase, st.Elapsed = Done, time.Duration(max(0, r.end-r.started))*time.Second
		st.Out = wholeLines(r.out, MaxOut)
	case r.ended:
		st.Phase, st.ExitCode, st.Elapsed = Failed, r.exit, time.Duration(max(0, r.end-r.started))*time.Second
		st.Message = cmpOr(clean(lastLine(r.out), maxMessage), "exit code "+strconv.Itoa(r.exit))
	default: // lost
		st.Phase, st.ExitCode = Failed, -1
		st.Message = "the step's runner ended without recording its end (killed, or its container restarted)"
	}
	if r.cancelled && st.Phase == Failed {
		st.Phase, st.Message = Cancelled, "cancelled"
	}
	return st
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// wholeLines is the tail of s of at most n bytes that starts a line (s
// itself when it has no more).
func wholeLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// lastLine is s's last line with anything but blanks on it.
func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}

// clean makes untrusted text safe to show: valid UTF-8, no control or
// formatting characters (a terminal escape, a bidirectional override), blanks
// collapsed, at most n runes.
func clean(s string, n int) string {
	s = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) && !unicode.IsSpace(c) || unicode.Is(unicode.Cf, c) {
			return -1
		}
		return c
	}, strings.ToValidUTF8(s, "\uFFFD"))
	out := make([]rune, 0, min(len(s), n+1))
	for _, f := range strings.Fields(s) {
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, []rune(f)...)
		if len(out) > n {
			return strings.TrimRight(string(out[:n]), " ") + "…"
		}
	}
	return string(out)
}
