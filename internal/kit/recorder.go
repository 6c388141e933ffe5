package kit

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// NoteLimit is the longest note events.k8s.io accepts (in bytes); a longer event is
// refused and lost.
const NoteLimit = 1024

// boundedRecorder cuts every event's note to what the API server accepts, so long
// exit messages and tool output still reach the Sandbox's events.
type boundedRecorder struct{ events.EventRecorder }

func Bounded(r events.EventRecorder) events.EventRecorder {
	if _, ok := r.(boundedRecorder); ok {
		return r
	}
	return boundedRecorder{r}
}

func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", Cut(fmt.Sprintf(note, args...), NoteLimit))
}

// Cut shortens s to at most limit bytes, on a character boundary, marking the cut.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const mark = "…"
	s = s[:limit-len(mark)]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + mark
}
