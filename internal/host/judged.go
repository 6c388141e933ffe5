package host

import "sync"

// judgedLimit bounds the memo of judgements; past it the memo starts afresh.
const judgedLimit = 4096

// judgements remembers judge's verdicts by container ID and wanted fingerprint:
// a container's record never changes, so a container kept behind the operator's
// settings costs one inspect, not one per pass.
type judgements struct {
	mu sync.Mutex
	m  map[[2]string]judgement
}

func (js *judgements) get(id, hash string) (judgement, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.m[[2]string{id, hash}]
	return j, ok
}

func (js *judgements) put(id, hash string, j judgement) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.m == nil || len(js.m) >= judgedLimit {
		js.m = map[[2]string]judgement{}
	}
	js.m[[2]string{id, hash}] = j
}
