package class

import (
	"context"
	"sync"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// cpusRecheck is the least time between two asks for the host's CPU count.
const cpusRecheck = 30 * time.Second

// hostCPUs remembers the Docker host's CPU count (Ping's NCPU), the ceiling of a
// service's cpu: Docker refuses more at create, a refusal no retry can fix.
//
// Note: it asks Docker only when it does not know the count, or when a request
// exceeds it (the host may have grown), and then at most once per cpusRecheck,
// so that a settled Sandbox costs no Docker call.
type hostCPUs struct {
	mu    sync.Mutex
	n     int
	asked time.Time
}

// ceiling is the host's CPU count, 0 while unknown (Docker does not answer),
// when a service wants wantMilli thousandths of a CPU.
func (h *hostCPUs) ceiling(ctx context.Context, driver dd.Driver, wantMilli int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if (h.n > 0 && wantMilli <= int64(h.n)*1000) || time.Since(h.asked) < cpusRecheck {
		return h.n
	}
	h.asked = time.Now()
	if info, err := driver.Ping(ctx); err == nil && info.NCPU > 0 {
		h.n = info.NCPU
	}
	return h.n
}
