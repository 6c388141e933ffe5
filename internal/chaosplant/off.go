//go:build !chaos_plant

package chaosplant

// Active says whether the bug is planted: never, in a normal build.
func Active(string) bool { return false }

// FirstSight says whether key is seen for the first time by this process while
// the bug is planted: never, in a normal build.
func FirstSight(string, string) bool { return false }

// CrashAfter kills the process after a named step when a test asks for it:
// never, in a normal build.
func CrashAfter(string) {}

// Hold blocks a step for good when a test asks for it: never, in a normal build.
func Hold(string) {}
