package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tool is the path of a tool pinned by its tools module hack/tools/<name>, built
// into bin/ once per machine by hack/build-tool.sh (promtool, helm).
func Tool(t T, name, module, pkg string) string {
	cmd := exec.Command(filepath.Join(Root(), "hack", "build-tool.sh"), name, module, pkg)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
