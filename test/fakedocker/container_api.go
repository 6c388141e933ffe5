package fakedocker

import (
	"archive/tar"
	"errors"
	"io"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// validName is Docker's rule for container names.
var validName = regexp.MustCompile(`^/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

func (s *Server) containerCreate(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if !decodeBody(w, r, &req) {
		return
	}
	name := r.URL.Query().Get("name")
	switch {
	case req.Config == nil:
		fail(w, http.StatusBadRequest, "config cannot be empty in order to create a container")
		return
	case name != "" && !validName.MatchString(name):
		fail(w, http.StatusBadRequest, "Invalid container name (%s), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", name)
		return
	case name == "":
		name = "fake_" + randomID()[:12]
	}
	name = strings.TrimPrefix(name, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.lookupImage(req.Image)
	if img == nil {
		fail(w, http.StatusNotFound, "No such image: %s", req.Image)
		return
	}
	if req.HostConfig != nil && req.HostConfig.NanoCPUs > int64(s.cpus)*1e9 {
		fail(w, http.StatusBadRequest, "Range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available", s.cpus, s.cpus)
		return
	}
	if holder, taken := s.names[name]; taken {
		s.stats.add(&s.stats.nameConflicts)
		fail(w, http.StatusConflict, `Conflict. The container name "/%s" is already in use by container "%s". `+
			`You have to remove (or rename) that container to be able to reuse that name.`, name, holder.id)
		return
	}
	c := s.newCtr(name, req, img)
	s.stats.created(c, s.duplicateOf(c))
	s.containers[c.id], s.names[c.name] = c, c
	s.indexService(c, true)
	s.emit(c, "create", nil)
	writeJSON(w, http.StatusCreated, container.CreateResponse{ID: c.id, Warnings: []string{}})
}

// withContainer runs fn on the container the path names, under s.mu, or answers
// that there is none (false).
func (s *Server) withContainer(w http.ResponseWriter, r *http.Request, fn func(c *ctr)) bool {
	ref := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.resolve(ref)
	if c == nil {
		fail(w, http.StatusNotFound, "No such container: %s", ref)
		return false
	}
	fn(c)
	return true
}

func (s *Server) containerStart(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *ctr) {
		if c.state == container.StateRunning {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if n := s.missingNetwork(c); n != "" {
			fail(w, http.StatusNotFound, "network %s not found", n)
			return
		}
		s.start(c)
		w.WriteHeader(http.StatusNoContent)
	})
}

// containerStop stops at once: the fake's processes end on SIGTERM.
func (s *Server) containerStop(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *ctr) {
		if c.state != container.StateRunning {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.exit(c, c.stopCode())
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) containerKill(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *ctr) {
		if c.state != container.StateRunning {
			fail(w, http.StatusConflict, "Cannot kill container: %s: Container %s is not running", r.PathValue("id"), c.id)
			return
		}
		s.exit(c, 137)
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) containerRemove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	force, volumes := q.Get("force") == "1" || q.Get("force") == "true", q.Get("v") == "1" || q.Get("v") == "true"
	s.withContainer(w, r, func(c *ctr) {
		if c.state == container.StateRunning && !force {
			fail(w, http.StatusConflict, "You cannot remove a running container %s. Stop the container before attempting removal or force remove", c.id)
			return
		}
		s.exit(c, 137)
		s.destroy(c, volumes)
		w.WriteHeader(http.StatusNoContent)
	})
}

func (s *Server) containerRename(w http.ResponseWriter, r *http.Request) {
	newName := strings.TrimPrefix(r.URL.Query().Get("name"), "/")
	if !validName.MatchString(newName) {
		fail(w, http.StatusBadRequest, "Invalid container name (%s), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", newName)
		return
	}
	s.withContainer(w, r, func(c *ctr) {
		holder, taken := s.names[newName]
		switch {
		case holder == c:
			fail(w, http.StatusBadRequest, "Renaming a container with the same name as its current name")
		case taken:
			fail(w, http.StatusConflict, `Conflict. The container name "/%s" is already in use by container "%s". `+
				`You have to remove (or rename) that container to be able to reuse that name.`, newName, holder.id)
		default:
			s.rename(c, newName)
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

// containerArchive extracts a tar of regular files under the path asked (the
// driver copies secrets to "/" before the start).
func (s *Server) containerArchive(w http.ResponseWriter, r *http.Request) {
	dest := r.URL.Query().Get("path")
	if !path.IsAbs(dest) {
		fail(w, http.StatusBadRequest, "path %q is not absolute", dest)
		return
	}
	files, err := readTar(r.Body, dest)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	s.withContainer(w, r, func(c *ctr) {
		c.write(files)
		w.WriteHeader(http.StatusOK)
	})
}

func readTar(body io.Reader, dest string) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(body)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue // directories are made as needed
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[path.Join(dest, h.Name)] = content
	}
}
