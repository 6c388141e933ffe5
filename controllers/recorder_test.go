package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutKeepsNotesWithinTheLimitOnACharacterBoundary(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", 2000), strings.Repeat("é", 700), strings.Repeat("x", noteLimit)} {
		got := cut(s, noteLimit)
		if len(got) > noteLimit || !utf8.ValidString(got) {
			t.Errorf("cut to %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), noteLimit)
		}
		if len(s) <= noteLimit && got != s {
			t.Errorf("a note within the limit was changed")
		}
		if len(s) > noteLimit && !strings.HasSuffix(got, "…") {
			t.Errorf("a cut note does not say it was cut")
		}
	}
}
