package host

import dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"

// ClassHash is the fingerprint of what a pool member shares with every service it
// can serve: the container as made, without its name, aliases and credentials
// (a claim renames the member and rotates its password). Written on members as
// LabelClass; a service claims only a member of its own class, and an operator
// change (images, limits, hardening) makes the members of the old class outdated.
func ClassHash(s dd.ContainerSpec) string {
	s.Name, s.Aliases, s.Labels = "", nil, nil
	files := make([]dd.File, len(s.Files))
	for i, f := range s.Files {
		files[i] = dd.File{Path: f.Path, Mode: f.Mode}
	}
	s.Files = files
	return Fingerprint(s)
}
