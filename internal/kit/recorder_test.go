package kit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutKeepsNotesWithinTheLimitOnACharacterBoundary(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", 2000), strings.Repeat("é", 700), strings.Repeat("x", NoteLimit)} {
		got := Cut(s, NoteLimit)
		if len(got) > NoteLimit || !utf8.ValidString(got) {
			t.Errorf("cut to %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), NoteLimit)
		}
		if len(s) <= NoteLimit && got != s {
			t.Errorf("a note within the limit was changed")
		}
		if len(s) > NoteLimit && !strings.HasSuffix(got, "…") {
			t.Errorf("a cut note does not say it was cut")
		}
	}
}
