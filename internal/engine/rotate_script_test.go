package engine

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// awkwardPassword has what breaks naive quoting in sh, SQL and printf.
const awkwardPassword = "it's \"q\" $HOME `id` \\ %s -x"

// fakeClients are stand-ins for psql and redis-cli: they log their argv, keep what
// they get on stdin, and accept a login only with $FAKE_ACCEPT (over the socket,
// unless FAKE_SOCKET=refuse; the check with the new password, psql's \connect,
// only when FAKE_LOGIN=ok).
var fakeClients = map[string]string{
	"psql": `#!/bin/sh
echo "$*" >>"$FAKE_DIR/argv"
in=$(cat)
case "$in" in
*ALTER*)
	case " $* " in
	*" -h "*) [ "$PGPASSWORD" = "$FAKE_ACCEPT" ] || exit 2 ;;
	*) [ "$FAKE_SOCKET" != refuse ] || exit 2 ;;
	esac
	printf '%s' "$in" >"$FAKE_DIR/stdin" ;;
esac
case "$in" in *'\connect'*) [ "$FAKE_LOGIN" = ok ] || exit 2; echo 1 ;; esac
`,
	"redis-cli": `#!/bin/sh
echo "$*" >>"$FAKE_DIR/argv"
case " $* " in
*" PING "*) [ "$FAKE_LOGIN" = ok ] && echo PONG || echo "NOAUTH Authentication required." ;;
*) cat >"$FAKE_DIR/stdin"; [ "$REDISCLI_AUTH" = "$FAKE_ACCEPT" ] && echo OK || echo "WRONGPASS invalid" ;;
esac
`,
}

// runOnHost runs s with this machine's sh, its secret files moved under dir
// (already holding the old ones), the fake clients first on PATH and fake added to
// its environment.
func runOnHost(t *testing.T, s Step, dir string, fake map[string]string) (passed bool, stdout string) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, script := range fakeClients {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	argv := append([]string(nil), s.Argv...)
	for i := 6; i < len(argv); i++ {
		argv[i] = filepath.Join(dir, filepath.Base(argv[i]))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_DIR="+dir)
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range fake {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	t.Logf("stdout %q stderr %q", out.String(), errOut.String())
	return s.Passed(cmd.ProcessState.ExitCode(), out.String()), out.String()
}

func TestRotateScriptsWithFakeClients(t *testing.T) {
	const oldPW = "old-pw"
	tests := []struct {
		name string
		e    Engine
		fake map[string]string
		pass bool
	}{
		{"postgres socket", postgres{}, map[string]string{"FAKE_LOGIN": "ok"}, true},
		{"postgres tcp old", postgres{}, map[string]string{"FAKE_SOCKET": "refuse", "FAKE_ACCEPT": oldPW, "FAKE_LOGIN": "ok"}, true},
		{"postgres tcp repeat", postgres{}, map[string]string{"FAKE_SOCKET": "refuse", "FAKE_ACCEPT": awkwardPassword, "FAKE_LOGIN": "ok"}, true},
		{"postgres refused", postgres{}, map[string]string{"FAKE_SOCKET": "refuse", "FAKE_ACCEPT": "other", "FAKE_LOGIN": "ok"}, false},
		{"postgres new login fails", postgres{}, map[string]string{}, false},
		{"redis old", redis{}, map[string]string{"FAKE_ACCEPT": oldPW, "FAKE_LOGIN": "ok"}, true},
		{"redis repeat", redis{}, map[string]string{"FAKE_ACCEPT": awkwardPassword, "FAKE_LOGIN": "ok"}, true},
		{"redis refused", redis{}, map[string]string{"FAKE_ACCEPT": "other", "FAKE_LOGIN": "ok"}, false},
		{"redis new login fails", redis{}, map[string]string{"FAKE_ACCEPT": oldPW}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for path, content := range tt.e.Container(oldPW, nil).Secrets {
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), []byte(content), 0o444); err != nil {
					t.Fatal(err)
				}
			}
			passed, _ := runOnHost(t, withEnv(tt.e.Rotate("10.0.0.2"), RotateEnv(tt.e, oldPW, awkwardPassword)), dir, tt.fake)
			if passed != tt.pass {
				t.Fatalf("passed %v, want %v", passed, tt.pass)
			}
			argvLog, _ := os.ReadFile(filepath.Join(dir, "argv"))
			if strings.Contains(string(argvLog), awkwardPassword) || strings.Contains(string(argvLog), oldPW) {
				t.Errorf("a client got a password in argv: %s", argvLog)
			}
			stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
			want := map[string]string{
				"postgres": `ALTER ROLE "sandbox" PASSWORD 'it''s "q" $HOME ` + "`id`" + ` \ %s -x';`,
				"redis":    awkwardPassword,
			}[tt.e.Name()]
			if tt.pass && !strings.Contains(string(stdin), want) {
				t.Errorf("the client got %q, want it to hold %q", stdin, want)
			}
			secretsHold := oldPW
			if tt.pass {
				secretsHold = awkwardPassword
			}
			checkSecrets(t, tt.e, dir, secretsHold)
		})
	}
}

// checkSecrets: every secret file under dir holds exactly what a container made
// with password would, and is still readable by all and writable by none.
func checkSecrets(t *testing.T, e Engine, dir, password string) {
	t.Helper()
	for path, want := range e.Container(password, nil).Secrets {
		local := filepath.Join(dir, filepath.Base(path))
		got, err := os.ReadFile(local)
		if err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", path, got, err, want)
		}
		if fi, err := os.Stat(local); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("%s: mode %v (%v), want 0444 as before", path, fi.Mode(), err)
		}
	}
}

// TestMongoRotateScriptFitsInSingleQuotes: the script is single-quoted in sh.
func TestMongoRotateScriptFitsInSingleQuotes(t *testing.T) {
	if strings.Contains(mongoRotateJS, "'") {
		t.Error("mongoRotateJS holds a single quote, which ends its sh quoting")
	}
}

// withEnv is s with env added, as a run of a prepared exec gets it.
func withEnv(s Step, env map[string]string) Step {
	s.Env = maps.Clone(s.Env)
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	maps.Copy(s.Env, env)
	return s
}
