package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

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
	d := testenv.NewDockerd(stalePrefix+id, "sbxc"+id, subnetFor(id),
		"/var/lib/sandbox-chaos-"+id, filepath.Join(logDir, "dockerd-"+id+".log"))
	return &daemon{Dockerd: d, altRoot: d.DataRoot + "-alt"}
}

// subnets are the bridges' subnets this process gave out: the parallel runs'
// daemons each need their own.
var subnets = struct {
	sync.Mutex
	taken map[int]bool
}{taken: map[int]bool{}}

// subnetFor picks the bridge's subnet from the id, skipping those this process
// gave out and those an interface of the machine uses.
func subnetFor(id string) string {
	octet := 0
	for _, c := range id {
		octet = (octet*31 + int(c)) % 200
	}
	used, _ := exec.Command("ip", "-o", "-4", "addr").Output()
	subnets.Lock()
	defer subnets.Unlock()
	for i := range 200 {
		o := (octet+i)%200 + 20
		if !subnets.taken[o] && !strings.Contains(string(used), fmt.Sprintf(" 10.213.%d.", o)) {
			subnets.taken[o] = true
			return fmt.Sprintf("10.213.%d.1/24", o)
		}
	}
	return fmt.Sprintf("10.213.%d.1/24", octet+20)
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
