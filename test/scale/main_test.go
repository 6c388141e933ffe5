// Package scale is the fleet's scale benchmark (make bench): the built manager,
// as one process or three, drives thousands of Sandboxes over fifty fake Docker
// hosts that one fakedocker process serves, against a real API server. Fake
// engines answer at once, so what it measures is the control plane's own cost:
// time to Ready, memory, API and Docker requests at rest, convergence after a
// restart, and duplicate creates (which must be none).
package scale

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// binDir holds the manager and fakedocker binaries built for this run.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Getenv("SANDBOX_BENCH") != "1" {
		return m.Run() // the benchmark skips itself; nothing to build
	}
	ctrllog.SetLogger(logr.Discard()) // the benchmark's own watch: its reflector's notes are noise here
	var err error
	if binDir, err = os.MkdirTemp("", "sandbox-scale-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	if err := testenv.BuildBinaries(binDir, map[string]string{"manager": "./cmd/manager", "fakedocker": "./cmd/fakedocker"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
