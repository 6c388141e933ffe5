package fakedocker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/jsonstream"
)

// registry is what the host can pull: references, how often each was pulled,
// and pulls held back. Guarded by Server.mu.
type registry struct {
	refs  map[string]bool // by normalized reference
	imgs  map[string]Image
	pulls map[string]int
	holds map[string]chan struct{}
}

// AddRegistryImage makes ref pullable (not present).
func (s *Server) AddRegistryImage(ref string, img Image) {
	key := mustNormalize(ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registry.refs[key], s.registry.imgs[key] = true, img
}

// RegistryPulls counts the pulls of ref that reached the registry.
func (s *Server) RegistryPulls(ref string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registry.pulls[mustNormalize(ref)]
}

// HoldPull makes pulls of ref wait at the registry until release (idempotent).
func (s *Server) HoldPull(ref string) (release func()) {
	key := mustNormalize(ref)
	ch := make(chan struct{})
	s.mu.Lock()
	s.registry.holds[key] = ch
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		if s.registry.holds[key] == ch {
			delete(s.registry.holds, key)
		}
		s.mu.Unlock()
		close(ch)
	})
}

// imageCreate is Docker's one endpoint for imports (fromSrc) and pulls (fromImage).
func (s *Server) imageCreate(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Get("fromSrc") == "-":
		s.imageImport(w, r)
	case q.Get("fromImage") != "":
		ref := q.Get("fromImage")
		if tag := q.Get("tag"); tag != "" {
			sep := ":"
			if strings.HasPrefix(tag, "sha256:") {
				sep = "@"
			}
			ref += sep + tag
		}
		s.imagePull(w, r, ref)
	default:
		fail(w, http.StatusBadRequest, "the fake imports from the request body (fromSrc=-) or pulls (fromImage)")
	}
}

// imageImport makes an empty image of the body, as `docker import` does: the
// way the driver plants its identity marker (LABEL changes).
func (s *Server) imageImport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := q.Get("repo")
	if tag := q.Get("tag"); tag != "" {
		ref += ":" + tag
	}
	if normalize(ref) == "" {
		fail(w, http.StatusBadRequest, "invalid reference format: %q", ref)
		return
	}
	img := newImage(ref, Image{})
	img.comment, img.labels = q.Get("message"), map[string]string{}
	for _, change := range q["changes"] {
		if err := img.apply(change); err != nil {
			fail(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	_, _ = io.Copy(io.Discard, r.Body) // the layer: the fake keeps no files
	s.mu.Lock()
	s.images[normalize(ref)] = img
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, jsonstream.Message{Status: img.id})
}

// apply makes one Dockerfile instruction of an import: LABEL, ENV and VOLUME
// count; those that change nothing the fake models are accepted as they are.
func (img *image) apply(change string) error {
	instr, args, _ := strings.Cut(strings.TrimSpace(change), " ")
	switch strings.ToUpper(instr) {
	case "LABEL", "ENV":
		pairs, err := keyValues(args)
		if err != nil {
			return fmt.Errorf("%s: %w", change, err)
		}
		for _, kv := range pairs {
			if strings.EqualFold(instr, "LABEL") {
				img.labels[kv[0]] = kv[1]
			} else {
				img.env = append(img.env, kv[0]+"="+kv[1])
			}
		}
	case "VOLUME":
		img.volumes = append(img.volumes, strings.Fields(args)...)
	case "CMD", "ENTRYPOINT", "WORKDIR", "USER", "EXPOSE":
	default:
		return fmt.Errorf("%s is not a valid change command", instr)
	}
	return nil
}

// keyValues reads `k=v k2="quoted v"` pairs.
func keyValues(s string) ([][2]string, error) {
	var out [][2]string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("want key=value, got %q", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			quoted, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("unterminated quote in %q", rest)
			}
			v, _ = strconv.Unquote(quoted)
			s = rest[len(quoted):]
		} else {
			v, s, _ = strings.Cut(rest, " ")
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// imagePull pulls from the fake registry: counted, held while a hold says so,
// and reported as one layer downloaded.
func (s *Server) imagePull(w http.ResponseWriter, r *http.Request, ref string) {
	key := normalize(ref)
	if key == "" {
		fail(w, http.StatusBadRequest, "invalid reference format: %q", ref)
		return
	}
	s.mu.Lock()
	s.registry.pulls[key]++
	hold, known, img := s.registry.holds[key], s.registry.refs[key] || s.pullAny, s.registry.imgs[key]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if !known {
		fail(w, http.StatusNotFound, "manifest for %s not found: manifest unknown: manifest unknown", ref)
		return
	}
	s.mu.Lock()
	s.images[key] = newImage(ref, img)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	const layer, size = "f00dfeedbeef", 1 << 20
	for _, m := range []jsonstream.Message{
		{Status: "Pulling from " + ref, ID: "latest"},
		{Status: "Pulling fs layer", ID: layer},
		{Status: "Downloading", ID: layer, Progress: &jsonstream.Progress{Current: size, Total: size}},
		{Status: "Pull complete", ID: layer},
		{Status: "Status: Downloaded newer image for " + ref},
	} {
		_ = enc.Encode(m)
	}
}
