package host

import (
	"fmt"
	"sync"
)

// judgedLimit bounds the memo of judgements; past it the memo starts afresh.
const judgedLimit = 4096

// judgements remembers judge's verdicts by container and what was wanted of it:
// a container's record never changes, so a container kept behind the operator's
// settings costs one inspect, not one per pass.
type judgements struct {
	mu sync.Mutex
	m  map[string]judgement
}

// judgedKey is what a verdict depends on: the container, the wanted fingerprint,
// and what tells the Sandbox's choices from the operator's.
func judgedKey(id string, svc Service) string {
	return fmt.Sprint(id, svc.Container.Labels[LabelConfigHash], svc.Chosen, svc.Features, svc.Images, svc.Hold)
}

func (js *judgements) get(key string) (judgement, bool) {
	js.mu.Lock()
	defer js.mu.Unlock()
	j, ok := js.m[key]
	return j, ok
}

func (js *judgements) put(key string, j judgement) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.m == nil || len(js.m) >= judgedLimit {
		js.m = map[string]judgement{}
	}
	js.m[key] = j
}
