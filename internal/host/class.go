package host

import (
	"strings"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// ClassHash is the fingerprint of what a pool member shares with every service it
// can serve: the container as made, without its name, aliases and credentials
// (a claim renames the member and rotates its password). Written on members as
// LabelClass; a service claims only a member of its own class, and an operator
// change (images, limits, hardening) makes the members of the old class outdated.
// The init scripts' content is part of it: a member seeded with other scripts
// (or none) is another class.
func ClassHash(s dd.ContainerSpec) string {
	s.Name, s.Aliases, s.Labels = "", nil, nil
	files := make([]dd.File, len(s.Files))
	for i, f := range s.Files {
		files[i] = dd.File{Path: f.Path, Mode: f.Mode}
		if strings.HasPrefix(f.Path, engine.InitDir) {
			files[i].Content = f.Content
		}
	}
	s.Files = files
	return Fingerprint(s)
}
