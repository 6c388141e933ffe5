package fakedocker

import (
	"cmp"
	"encoding/binary"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// dockerTime is Docker's time format; the zero time is "0001-01-01T00:00:00Z".
func dockerTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *Server) containerInspect(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *ctr) {
		c.observe()
		writeJSON(w, http.StatusOK, c.inspect())
	})
}

// inspect is c as Docker reports it. Callers hold s.mu.
func (c *ctr) inspect() container.InspectResponse {
	cfg, host := c.config, c.host
	cfg.Labels, cfg.Env, cfg.Cmd = maps.Clone(c.config.Labels), slices.Clone(c.config.Env), slices.Clone(c.config.Cmd)
	nets := map[string]*network.EndpointSettings{}
	for n, aliases := range c.aliases {
		nets[n] = &network.EndpointSettings{Aliases: slices.Clone(aliases), IPAddress: c.ips[n]}
	}
	return container.InspectResponse{
		ID:      c.id,
		Name:    "/" + c.name,
		Created: dockerTime(c.created),
		Path:    strings.Join(cfg.Cmd[:min(1, len(cfg.Cmd))], ""),
		Image:   c.imageID,
		State: &container.State{
			Status: c.state, Running: c.state == container.StateRunning, Dead: c.state == container.StateDead,
			ExitCode: c.exitCode, StartedAt: dockerTime(c.started), FinishedAt: dockerTime(c.finished),
		},
		Driver:          "overlay2",
		HostConfig:      &host,
		Config:          &cfg,
		Mounts:          slices.Clone(c.mounts),
		NetworkSettings: &container.NetworkSettings{Networks: nets},
	}
}

// containerList lists the containers carrying the label filter's labels,
// newest first; only the running ones unless all is asked.
func (s *Server) containerList(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilters(r, "label")
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	all := r.URL.Query().Get("all") == "1" || r.URL.Query().Get("all") == "true"
	s.mu.Lock()
	out := []container.Summary{}
	var listed []*ctr
	for _, c := range s.containers {
		if (all || c.state == container.StateRunning) && f.labelsMatch(c.config.Labels) {
			out = append(out, c.summary())
			listed = append(listed, c)
		}
	}
	observeListed(f, listed)
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b container.Summary) int {
		return cmp.Or(cmp.Compare(b.Created, a.Created), strings.Compare(a.ID, b.ID))
	})
	writeJSON(w, http.StatusOK, out)
}

func (c *ctr) summary() container.Summary {
	sum := container.Summary{
		ID: c.id, Names: []string{"/" + c.name}, Image: c.config.Image, ImageID: c.imageID,
		Command: strings.Join(c.config.Cmd, " "), Created: c.created.Unix(), Labels: maps.Clone(c.config.Labels),
		State: c.state, Status: string(c.state), Mounts: slices.Clone(c.mounts),
	}
	sum.HostConfig.NetworkMode = string(c.host.NetworkMode)
	return sum
}

// containerLogs writes the last lines of the log, multiplexed as a container
// without a TTY has it.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stdout, stderr := q.Get("stdout") == "1" || q.Get("stdout") == "true", q.Get("stderr") == "1" || q.Get("stderr") == "true"
	var lines []logLine
	found := s.withContainer(w, r, func(c *ctr) {
		for _, l := range c.logs {
			if l.stderr && stderr || !l.stderr && stdout {
				lines = append(lines, l)
			}
		}
	})
	if !found {
		return
	}
	if n, err := strconv.Atoi(q.Get("tail")); err == nil && n >= 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	w.WriteHeader(http.StatusOK)
	for _, l := range lines {
		kind := stdcopy.Stdout
		if l.stderr {
			kind = stdcopy.Stderr
		}
		_, _ = w.Write(frame(kind, []byte(l.text)))
	}
}

// frame is p as one frame of Docker's multiplexed stream.
func frame(kind stdcopy.StdType, p []byte) []byte {
	out := make([]byte, 8, 8+len(p))
	out[0] = byte(kind)
	binary.BigEndian.PutUint32(out[4:], uint32(len(p)))
	return append(out, p...)
}
