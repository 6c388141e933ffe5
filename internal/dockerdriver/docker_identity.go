package dockerdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// The identity marker is an empty image, tagged <IdentityRepo>:<id> and labelled
// IdentityLabel=<id>.
//
// Note: an image, because it is the Docker object that outlives what a host goes
// through without becoming another host: a daemon restart, and `docker system prune
// --volumes` (which removes stopped containers, unused networks and volumes,
// dangling images and build cache; a tagged image is none of those). Only an
// explicit `docker rmi` or `docker system prune -a` removes it; the host is then
// unproven until a new marker is planted, which can never equal another host's.
const (
	IdentityRepo  = "sandbox-controller/host-identity"
	IdentityLabel = "sandbox.roboco.io/host-identity"
)

// validIdentity is what an identity may look like: it is a tag and a label value.
var validIdentity = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidateIdentity refuses what cannot be planted as an identity, as
// PlantHostIdentity does (fakes use it).
func ValidateIdentity(repo, id string) error {
	if !validIdentity.MatchString(id) {
		return NewError("plant host identity", repo, ErrInvalid, fmt.Errorf("identity %q is not 1-63 letters, digits, '_', '.' or '-'", id))
	}
	return nil
}

// WithIdentityMarker names the identity marker's repository (default IdentityRepo)
// and adds labels to it, so that a test can plant a marker of its own on a shared
// daemon and find it to clean up.
func WithIdentityMarker(repo string, labels map[string]string) Option {
	return func(o *options) { o.identityRepo, o.identityLabels = repo, maps.Clone(labels) }
}

// HostIdentity reads the oldest marker back, and the daemon's ID and name.
func (d *Docker) HostIdentity(ctx context.Context) (HostIdentity, error) {
	repo := d.opts.identityRepo
	f := client.Filters{}.Add("reference", repo).Add("label", IdentityLabel)
	list, err := d.cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return HostIdentity{}, wrap("host identity", repo, err)
	}
	var id string
	var created time.Time
	for _, img := range list.Items {
		// Note: the list gives creation times in whole seconds; two markers planted
		// at once are told apart by the inspect's nanoseconds.
		res, err := d.cli.ImageInspect(ctx, img.ID)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return HostIdentity{}, wrap("host identity", repo, err)
		}
		if res.Config == nil || res.Config.Labels[IdentityLabel] == "" {
			continue
		}
		at, this := parseTime(res.Created), res.Config.Labels[IdentityLabel]
		if id == "" || at.Before(created) || at.Equal(created) && this < id {
			id, created = this, at
		}
	}
	if id == "" {
		return HostIdentity{}, NewError("host identity", repo, ErrNotFound, errors.New("no identity marker is planted on this Docker host"))
	}
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return HostIdentity{}, wrap("host identity", repo, err)
	}
	return HostIdentity{ID: id, DaemonID: info.Info.ID, Name: info.Info.Name}, nil
}

// PlantHostIdentity imports an empty image carrying id as its tag and label.
func (d *Docker) PlantHostIdentity(ctx context.Context, id string) error {
	repo := d.opts.identityRepo
	if err := ValidateIdentity(repo, id); err != nil {
		return err
	}
	var empty bytes.Buffer
	if err := tar.NewWriter(&empty).Close(); err != nil {
		return NewError("plant host identity", repo, nil, err)
	}
	changes := []string{"LABEL " + IdentityLabel + "=" + id}
	for _, k := range slices.Sorted(maps.Keys(d.opts.identityLabels)) {
		changes = append(changes, fmt.Sprintf("LABEL %s=%q", k, d.opts.identityLabels[k]))
	}
	res, err := d.cli.ImageImport(ctx, client.ImageImportSource{Source: &empty, SourceName: "-"}, repo+":"+id,
		client.ImageImportOptions{Changes: changes, Message: "sandbox-controller: this Docker host's identity; do not remove"})
	if err != nil {
		return wrap("plant host identity", repo, err)
	}
	defer func() { _ = res.Close() }() // a read stream: nothing is lost if closing fails
	dec := json.NewDecoder(res)
	for {
		var m jsonstream.Message
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return wrap("plant host identity", repo, err)
		}
		if m.Error != nil {
			return NewError("plant host identity", repo, nil, errors.New(m.Error.Message))
		}
	}
}
