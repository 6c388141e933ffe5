package fakedocker

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// ctr is one container. Its fields are guarded by Server.mu.
type ctr struct {
	id, name string
	created  time.Time
	config   container.Config // as created, the image's Env first
	host     container.HostConfig
	aliases  map[string][]string // by network joined
	ips      map[string]netip.Addr
	imageID  string
	state    container.ContainerState
	exitCode int
	started  time.Time
	finished time.Time
	mounts   []container.MountPoint
	files    map[string][]byte
	logs     []logLine
	// done is closed when the current run ends: the execs in it end too.
	done     chan struct{}
	script   fake.Script
	scripted bool
	// observed is when a client last looked at this container on its own (Observed).
	observed time.Time
}

type logLine struct {
	stderr bool
	text   string // one line, with its "\n"
}

// resolve finds a container as Docker does: full ID, then name, then unique ID
// prefix. Callers hold s.mu.
func (s *Server) resolve(ref string) *ctr {
	if c, ok := s.containers[ref]; ok {
		return c
	}
	if c, ok := s.names[strings.TrimPrefix(ref, "/")]; ok {
		return c
	}
	var found *ctr
	for id, c := range s.containers {
		if ref != "" && strings.HasPrefix(id, ref) {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

// newCtr is a created container of img. Callers hold s.mu.
func (s *Server) newCtr(name string, req container.CreateRequest, img *image) *ctr {
	c := &ctr{id: randomID(), name: name, created: time.Now(), config: *req.Config, imageID: img.id,
		state: container.StateCreated, aliases: map[string][]string{}, ips: map[string]netip.Addr{}}
	if req.HostConfig != nil {
		c.host = *req.HostConfig
	}
	c.config.Labels = maps.Clone(req.Labels)
	c.config.Env = append(slices.Clone(img.env), req.Env...)
	network := string(c.host.NetworkMode)
	if network == "" || network == "default" {
		network = "bridge"
	}
	c.aliases[network] = nil
	if req.NetworkingConfig != nil {
		for name, ep := range req.NetworkingConfig.EndpointsConfig {
			if ep != nil {
				c.aliases[name] = slices.Clone(ep.Aliases)
			}
		}
	}
	for _, path := range img.volumes {
		if _, covered := c.host.Tmpfs[path]; covered {
			continue // as in Docker, a tmpfs at a VOLUME path replaces the volume
		}
		vol := randomID()
		s.volumes[vol] = c.id
		c.mounts = append(c.mounts, container.MountPoint{Type: mount.TypeVolume, Name: vol, Destination: path, RW: true})
	}
	c.script, c.scripted = fake.ParseScript(c.config.Cmd)
	return c
}

// missingNetwork is a network c joins that does not exist ("": none). Callers
// hold s.mu.
func (s *Server) missingNetwork(c *ctr) string {
	for _, n := range slices.Sorted(maps.Keys(c.aliases)) {
		if !s.anyNetwork && !s.networks[n] {
			return n
		}
	}
	return ""
}

// start runs c: its script writes its log, then exits after its sleep (or runs
// until stopped, as any other command does). Callers hold s.mu.
func (s *Server) start(c *ctr) {
	c.state, c.exitCode = container.StateRunning, 0
	c.started, c.finished = time.Now(), time.Time{}
	c.done = make(chan struct{})
	for n := range c.aliases {
		c.ips[n] = netip.AddrFrom4([4]byte{10, byte(s.nextIP >> 16), byte(s.nextIP >> 8), byte(s.nextIP)})
		s.nextIP++
	}
	s.emit(c, "start", nil)
	if !c.scripted {
		return
	}
	stdout, stderr := c.script.Output(c.config.Env, c.files)
	c.log(stdout, false)
	c.log(stderr, true)
	switch after := c.script.Sleep; {
	case after == fake.Forever:
	case after <= 0:
		s.exit(c, c.script.Exit)
	default:
		done := c.done
		time.AfterFunc(after, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if c.done == done {
				s.exit(c, c.script.Exit)
			}
		})
	}
}

func (c *ctr) log(out string, stderr bool) {
	for l := range strings.SplitAfterSeq(out, "\n") {
		if l != "" {
			c.logs = append(c.logs, logLine{stderr: stderr, text: l})
		}
	}
}

// stopCode is what c's process exits with on SIGTERM: a script's trap says 143.
func (c *ctr) stopCode() int {
	if c.scripted {
		return 143
	}
	return 0
}

// exit ends c's run, and the execs in it. Callers hold s.mu.
func (s *Server) exit(c *ctr, code int) {
	if c.state != container.StateRunning {
		return
	}
	c.state, c.exitCode, c.finished = container.StateExited, code, time.Now()
	clear(c.ips)
	close(c.done)
	s.emit(c, "die", map[string]string{"exitCode": strconv.Itoa(code)})
}

// destroy removes c, which is not running, and its volumes if asked. Callers
// hold s.mu.
func (s *Server) destroy(c *ctr, volumes bool) {
	delete(s.containers, c.id)
	delete(s.names, c.name)
	s.indexService(c, false)
	s.forgetExecs(c)
	for _, m := range c.mounts {
		if volumes && m.Type == mount.TypeVolume {
			delete(s.volumes, m.Name)
		}
	}
	s.emit(c, "destroy", nil)
}

// rename gives c the name newName. Callers hold s.mu.
func (s *Server) rename(c *ctr, newName string) {
	old := c.name
	delete(s.names, old)
	c.name = newName
	s.names[newName] = c
	s.emit(c, "rename", map[string]string{"oldName": "/" + old})
}

// write puts an archive's files into c. Callers hold s.mu.
func (c *ctr) write(files map[string][]byte) {
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	maps.Copy(c.files, files)
}
