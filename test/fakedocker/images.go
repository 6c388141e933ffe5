package fakedocker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	imagetypes "github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// image is one image on the host, under one tag.
type image struct {
	id      string // "sha256:<hex>"
	ref     reference.Named
	created time.Time
	labels  map[string]string
	env     []string
	volumes []string
	comment string
}

// defaultEnv is what an image's environment holds at least.
var defaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

func newImage(ref string, img Image) *image {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		panic(fmt.Sprintf("fakedocker: invalid image reference %q: %v", ref, err))
	}
	named = reference.TagNameOnly(named)
	sum := sha256.Sum256([]byte(named.String() + time.Now().String()))
	env := img.Env
	if len(env) == 0 {
		env = defaultEnv
	}
	return &image{id: "sha256:" + hex.EncodeToString(sum[:]), ref: named, created: time.Now(),
		env: slices.Clone(env), volumes: slices.Clone(img.Volumes)}
}

// normalize is ref's canonical form, the key of Server.images ("": invalid).
func normalize(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ""
	}
	return reference.TagNameOnly(named).String()
}

func mustNormalize(ref string) string {
	key := normalize(ref)
	if key == "" {
		panic(fmt.Sprintf("fakedocker: invalid image reference %q", ref))
	}
	return key
}

// AddImage makes ref present on the host.
func (s *Server) AddImage(ref string, img Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[mustNormalize(ref)] = newImage(ref, img)
}

// lookupImage finds an image by reference, ID or unique ID prefix. Callers hold s.mu.
func (s *Server) lookupImage(ref string) *image {
	if key := normalize(ref); key != "" {
		if img, ok := s.images[key]; ok {
			return img
		}
	}
	hexID := strings.TrimPrefix(ref, "sha256:")
	var found *image
	for _, img := range s.images {
		if len(hexID) >= 4 && strings.HasPrefix(strings.TrimPrefix(img.id, "sha256:"), hexID) {
			if found != nil && found.id != img.id {
				return nil
			}
			found = img
		}
	}
	return found
}

func (s *Server) imageInspect(w http.ResponseWriter, r *http.Request) {
	ref, ok := strings.CutSuffix(r.PathValue("ref"), "/json")
	if !ok {
		s.unknown(w, r)
		return
	}
	s.mu.Lock()
	img := s.lookupImage(ref)
	var res imagetypes.InspectResponse
	if img != nil {
		res = img.inspect()
	}
	s.mu.Unlock()
	if img == nil {
		fail(w, http.StatusNotFound, "No such image: %s", ref)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (img *image) inspect() imagetypes.InspectResponse {
	cfg := &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{
		Labels: maps.Clone(img.labels), Env: slices.Clone(img.env), Volumes: map[string]struct{}{}}}
	for _, v := range img.volumes {
		cfg.Volumes[v] = struct{}{}
	}
	return imagetypes.InspectResponse{ID: img.id, RepoTags: []string{reference.FamiliarString(img.ref)},
		Created: dockerTime(img.created), Comment: img.comment, Config: cfg, Os: "linux", Architecture: "amd64"}
}

// imageList lists the images matching the reference and label filters.
func (s *Server) imageList(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilters(r, "reference", "label")
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	s.mu.Lock()
	out := []imagetypes.Summary{}
	for _, img := range s.images {
		if f.labelsMatch(img.labels) && f.referenceMatch(img.ref) {
			out = append(out, imagetypes.Summary{ID: img.id, RepoTags: []string{reference.FamiliarString(img.ref)},
				Created: img.created.Unix(), Labels: maps.Clone(img.labels), Containers: -1})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// referenceMatch: one of the reference filter's patterns matches ref, as
// Docker's does (with or without its tag).
func (f filters) referenceMatch(ref reference.Named) bool {
	if len(f["reference"]) == 0 {
		return true
	}
	for pattern := range f["reference"] {
		if ok, _ := reference.FamiliarMatch(pattern, ref); ok {
			return true
		}
	}
	return false
}
