package engine

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A data step that lists (DataOp.Lists) prints, after the operation, a line
// CheckpointsHeader and one line per checkpoint the container holds:
// "checkpoint <name> <unix seconds> <bytes>". A step that found its request
// done before (the container's mark) prints no listing.
const CheckpointsHeader = "sandbox-checkpoints"

// Checkpoint is one checkpoint a container holds.
type Checkpoint struct {
	Name  string
	Taken time.Time
	Bytes int64
}

// maxListed bounds what a listing is read for: the API's ceiling.
const maxListed = 100

var checkpointName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// ParseCheckpoints reads the listing in a data step's output; ok is false
// when it has none. The output is untrusted (an agent names its own
// databases): a line that is not a well-formed checkpoint is skipped.
func ParseCheckpoints(out string) (list []Checkpoint, ok bool) {
	_, after, ok := strings.Cut(out, CheckpointsHeader+"\n")
	if !ok {
		return nil, false
	}
	list = []Checkpoint{}
	seen := map[string]bool{}
	for _, line := range strings.Split(after, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "checkpoint" || !checkpointName.MatchString(f[1]) || seen[f[1]] || len(list) == maxListed {
			continue
		}
		secs, err1 := strconv.ParseInt(f[2], 10, 64)
		size, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || secs < 0 || size < 0 {
			continue
		}
		seen[f[1]] = true
		list = append(list, Checkpoint{Name: f[1], Taken: time.Unix(secs, 0).UTC(), Bytes: size})
	}
	return list, true
}
