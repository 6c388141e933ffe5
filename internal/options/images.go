package options

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// ImageFlag and KitchenSinkFlag are the manager's flags that set Images[e.Name()]
// (Default and KitchenSink); Validate names them.
func ImageFlag(e engine.Engine) string       { return e.Name() + "-image" }
func KitchenSinkFlag(e engine.Engine) string { return e.Name() + "-kitchen-sink-image" }

// ImagesFor is the engine's images after the operator's overrides.
func (o Options) ImagesFor(e engine.Engine) engine.Images {
	images := e.Images()
	if ov, ok := o.Images[e.Name()]; ok {
		if ov.Default != "" {
			images.Default = ov.Default
		}
		if ov.KitchenSink != "" {
			images.KitchenSink = ov.KitchenSink
		}
	}
	return images
}

// validateImages reports image overrides that are no image reference.
func (o Options) validateImages(bad func(format string, args ...any)) {
	for _, name := range slices.Sorted(maps.Keys(o.Images)) {
		e, ok := engine.Lookup(name)
		if !ok {
			bad("image override for unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", "))
			continue
		}
		// Note: an empty reference is no override (imagesFor keeps the registry's).
		imgs := o.Images[name]
		for _, ov := range []struct{ flag, ref string }{{ImageFlag(e), imgs.Default}, {KitchenSinkFlag(e), imgs.KitchenSink}} {
			if ov.ref == "" {
				continue
			}
			if _, err := reference.ParseNormalizedNamed(ov.ref); err != nil {
				bad("--%s %q is not an image reference (e.g. postgres:16-alpine or registry.example:5000/team/postgres:16): %v", ov.flag, ov.ref, err)
			}
		}
	}
}

// ImagesOf is the images of version of e ("": the default images), or an
// error naming the versions offered.
func (o Options) ImagesOf(e engine.Engine, version string) (engine.Images, error) {
	if version == "" || version == o.DefaultVersion(e) {
		return o.ImagesFor(e), nil
	}
	if images, ok := o.Versions[e.Name()][version]; ok {
		return images, nil
	}
	return engine.Images{}, fmt.Errorf("%s version %q is not offered; offered: %s", e.Name(), version, strings.Join(o.OfferedVersions(e), ", "))
}

// DefaultVersion names the version of e's default images.
func (o Options) DefaultVersion(e engine.Engine) string {
	if v := o.DefaultVersions[e.Name()]; v != "" {
		return v
	}
	return "default"
}

// OfferedVersions lists e's versions, the default first (marked so).
func (o Options) OfferedVersions(e engine.Engine) []string {
	out := []string{o.DefaultVersion(e) + " (default, or leave version empty)"}
	for _, v := range slices.Sorted(maps.Keys(o.Versions[e.Name()])) {
		if v != o.DefaultVersion(e) {
			out = append(out, v)
		}
	}
	return out
}

// versionPattern is what a version name may be (as the CRD says).
var versionPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,31}$`)

// validateVersions reports offered versions of unknown engines, badly named,
// or without an image reference.
func (o Options) validateVersions(bad func(format string, args ...any)) {
	for _, name := range slices.Sorted(maps.Keys(o.Versions)) {
		if _, ok := engine.Lookup(name); !ok {
			bad("--engine-version: unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", "))
			continue
		}
		for _, v := range slices.Sorted(maps.Keys(o.Versions[name])) {
			imgs := o.Versions[name][v]
			if !versionPattern.MatchString(v) {
				bad("--engine-version %s:%s: a version is 1-32 lowercase letters, digits, '.' and '-', starting with a letter or digit", name, v)
			}
			if _, err := reference.ParseNormalizedNamed(imgs.Default); err != nil {
				bad("--engine-version %s:%s=%q: not an image reference: %v", name, v, imgs.Default, err)
			}
			if imgs.KitchenSink != "" {
				if _, err := reference.ParseNormalizedNamed(imgs.KitchenSink); err != nil {
					bad("--engine-version %s:%s kitchen-sink image %q: not an image reference: %v", name, v, imgs.KitchenSink, err)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.DefaultVersions)) {
		if _, ok := engine.Lookup(name); !ok {
			bad("--default-version: unknown engine %q (engines: %s)", name, strings.Join(engine.Names(), ", "))
		} else if v := o.DefaultVersions[name]; !versionPattern.MatchString(v) {
			bad("--default-version %s=%s: a version is 1-32 lowercase letters, digits, '.' and '-', starting with a letter or digit", name, v)
		}
	}
}
