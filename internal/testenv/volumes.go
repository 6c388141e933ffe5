package testenv

import "time"

// LeakedVolumes reports the volumes dangling lists that are not in before (an
// earlier answer of dangling), once the answer has been empty or has held for 3 s:
// a volume dangles for an instant while its container is being removed, and that
// is not a leak. Only dangling volumes count, because tests of other packages run
// beside ours on the same daemon and hold volumes of their own.
func LeakedVolumes(before map[string]bool, dangling func() map[string]bool) []string {
	var leaked []string
	for end := time.Now().Add(3 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		leaked = leaked[:0]
		for v := range dangling() {
			if !before[v] {
				leaked = append(leaked, v)
			}
		}
		if len(leaked) == 0 || time.Now().After(end) {
			return leaked
		}
	}
}
