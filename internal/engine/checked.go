package engine

import "slices"

// checkScript runs a step's command and exits 0 only when the step passed
// (Passed: exit 0 and its Expect in stdout), for a runner that records exit
// codes alone (a step beside the pass). The command's output is passed on.
const checkScript = `expect=$1; shift; out=$("$@"); rc=$?; printf '%s\n' "$out"
[ "$rc" -eq 0 ] || exit "$rc"
case $out in *"$expect"*) exit 0;; esac
echo "its output lacks $expect" >&2; exit 1`

const checkedArg0 = "checked"

// Checked is s as one command whose exit code alone says whether it passed.
func (s Step) Checked() Step {
	if s.Expect == "" {
		return s
	}
	c := s
	c.Argv = append([]string{"sh", "-c", checkScript, checkedArg0, s.Expect}, s.Argv...)
	c.Expect = ""
	return c
}

// Unchecked undoes Checked: argv's own command and what it must print; ok
// says argv is a checked one (a simulator runs the command itself).
func Unchecked(argv []string) (cmd []string, expect string, ok bool) {
	if len(argv) < 6 || !slices.Equal(argv[:4], []string{"sh", "-c", checkScript, checkedArg0}) {
		return nil, "", false
	}
	return argv[5:], argv[4], true
}
