package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A listing is untrusted (an agent names its own databases): what is not a
// well-formed checkpoint line is skipped, a name counts once, and at most
// maxListed are read; no header is no listing.
func TestParseCheckpointsReadsOnlyWellFormedLines(t *testing.T) {
	if _, ok := ParseCheckpoints("sandbox-data-done\n"); ok {
		t.Error("an output without a listing was read as one")
	}
	out := "noise\n" + CheckpointsHeader + "\n" + strings.Join([]string{
		"checkpoint a 1700000000 10",
		"checkpoint Bad 1700000000 10",
		"checkpoint ../x 1700000000 10",
		"checkpoint b -1 10",
		"checkpoint c 1700000000 x",
		"checkpoint a 1700000001 11",
		"checkpoint d 1700000002 12 extra",
		"checkpoint e 1700000003 13",
	}, "\n") + "\n" + DataDone + "\n"
	list, ok := ParseCheckpoints(out)
	if !ok || len(list) != 2 || list[0] != (Checkpoint{"a", time.Unix(1700000000, 0).UTC(), 10}) || list[1].Name != "e" {
		t.Errorf("ParseCheckpoints = %+v, %v; want a (its first line) and e", list, ok)
	}
	var many strings.Builder
	many.WriteString(CheckpointsHeader + "\n")
	for i := range 150 {
		fmt.Fprintf(&many, "checkpoint n%d 1700000000 1\n", i)
	}
	if list, _ := ParseCheckpoints(many.String()); len(list) != maxListed {
		t.Errorf("%d read of 150; want at most %d", len(list), maxListed)
	}
}
