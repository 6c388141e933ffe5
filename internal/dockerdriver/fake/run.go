// What happens to a fake container as it runs: the files written before its
// start, why a start fails, the start itself and its exit.

package fake

import (
	"fmt"
	"slices"
	"strings"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// startFailure is why Docker would refuse to start c: its network is gone, or
// an AtStart fault says so. Callers hold f.mu.
func (f *Driver) startFailure(c *ctr) error {
	for network := range c.c.Networks {
		if !f.networks[network] {
			return dd.NewError("start", c.c.Name, dd.ErrNotFound,
				fmt.Errorf("Error response from daemon: network %s not found", network))
		}
	}
	if c.startErr != nil {
		return c.startErr
	}
	if ft := f.matchFault(VerbCreateContainer, []string{c.c.Name, c.c.ID}, true); ft != nil && ft.Err != nil {
		err := faultError("start", c.c.Name, ft.Err)
		if ft.Sticks {
			c.startErr = err
		}
		return err
	}
	return nil
}

// write puts files into the container, as the real driver does between
// create and start.
func (c *ctr) write(files []dd.File) {
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	for _, file := range files {
		c.files[file.Path] = slices.Clone(file.Content)
	}
}

// start runs the container's script. Callers hold f.mu.
func (f *Driver) start(c *ctr) {
	c.gen++
	c.c.State = dd.StateRunning
	c.c.StartedAt = time.Now()
	c.c.FinishedAt = time.Time{}
	c.c.ExitCode = 0
	c.c.OOMKilled = false
	for name, ep := range c.c.Networks {
		ep.IPAddress = fmt.Sprintf("172.30.%d.%d", f.nextIP/250, f.nextIP%250+2)
		f.nextIP++
		c.c.Networks[name] = ep
	}
	f.emit(c, dd.EventStart, 0)
	if !c.scripted {
		return
	}
	stdout, stderr := c.script.Output(c.c.Env, c.files)
	c.logs = append(c.logs, lines(stdout)...)
	c.logs = append(c.logs, lines(stderr)...)
	switch s := c.script.Sleep; {
	case s == Forever:
	case s <= 0:
		f.exit(c, c.script.Exit, false)
	default:
		f.exitLater(c, c.script.Exit, s)
	}
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitAfterSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// exitLater arms a timer for the current run. Callers hold f.mu.
func (f *Driver) exitLater(c *ctr, code int, after time.Duration) {
	gen := c.gen
	time.AfterFunc(after, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if c.gen == gen && f.containers[c.c.ID] == c {
			f.exit(c, code, false)
		}
	})
}

// exit ends a running container. Callers hold f.mu.
func (f *Driver) exit(c *ctr, code int, oom bool) {
	if c.c.State != dd.StateRunning {
		return
	}
	c.gen++
	c.lingering = nil
	c.c.State = dd.StateExited
	c.c.ExitCode = code
	c.c.OOMKilled = oom
	c.c.FinishedAt = time.Now()
	for name, ep := range c.c.Networks {
		ep.IPAddress = ""
		c.c.Networks[name] = ep
	}
	if oom {
		f.emit(c, dd.EventOOM, 0)
	}
	f.emit(c, dd.EventDie, code)
}
