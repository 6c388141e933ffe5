package engine

import "testing"

// TestRedisConfigValue: a password reaches redis.conf as one argument, whatever it holds.
func TestRedisConfigValue(t *testing.T) {
	for pw, want := range map[string]string{
		"0123abcdef":       "0123abcdef",
		`a\b$c`:            `a\b$c`,
		"":                 `""`,
		"a b":              `"a b"`,
		`it's`:             `"it's"`,
		`say "hi" \ there`: `"say \"hi\" \\ there"`,
		"line\nbreak\x7f":  `"line\x0abreak\x7f"`,
	} {
		if got := redisConfigValue(pw); got != want {
			t.Errorf("redisConfigValue(%q) = %s, want %s", pw, got, want)
		}
	}
}
