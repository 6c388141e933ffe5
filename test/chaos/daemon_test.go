package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// daemon is the suite's own Docker engine (testenv.Dockerd), so that restarting
// it disturbs no other suite (they share the default one). Its data root can be
// swapped for another one's (altRoot), which is to the manager a different
// Docker host behind the same socket.
type daemon struct {
	*testenv.Dockerd
	altRoot string // another host, for the host-swap fault (DataRoot is the suite's)
}

// stalePrefix names every suite daemon's files under /run.
const stalePrefix = "sbxc-"

func newDaemon(id, logDir string) *daemon {
	// Note: the bridge's subnet is picked from the id.
	octet := 0
	for _, c := range id {
		octet = (octet*31 + int(c)) % 200
	}
	d := testenv.NewDockerd(stalePrefix+id, "sbxc"+id, fmt.Sprintf("10.213.%d.1/24", octet+20),
		"/var/lib/sandbox-chaos-"+id, filepath.Join(logDir, "dockerd-"+id+".log"))
	return &daemon{Dockerd: d, altRoot: d.DataRoot + "-alt"}
}

// restart stops dockerd and starts it again on dataRoot.
func (d *daemon) restart(dataRoot string) error {
	d.Stop()
	return d.Start(dataRoot)
}

// removeStale removes what an earlier run killed outright left behind: the
// daemons (stopped, with their containers), data roots, exec roots and bridges
// of suite daemons whose test process is gone.
func removeStale() {
	for _, name := range testenv.StaleDockerds(stalePrefix) {
		id := strings.TrimPrefix(name, stalePrefix)
		newDaemon(id, os.TempDir()).Teardown()
	}
}
