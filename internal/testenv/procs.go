package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FreeAddr is a loopback address (host:port) no one listens on now, for a
// process the test starts to bind next.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	// Closed before the process binds it: a listener left open would hold it.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// BuildBinaries builds each package (by its path from the repository root) into
// dir under its binary's name, statically, for a suite's own processes.
func BuildBinaries(dir string, pkgs map[string]string) error {
	for bin, pkg := range pkgs {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, bin), pkg)
		build.Dir = Root()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}
