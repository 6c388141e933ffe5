package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// addVersionFlags adds the engine versions services may pick (--engine-version)
// and the default images' version names (--default-version).
func addVersionFlags(fs *pflag.FlagSet, s *settings) {
	fs.StringArrayVar(&s.versions, "engine-version", nil,
		"A version of an engine that services may pick (spec.services[].version), besides the default images: "+
			"`ENGINE:VERSION=IMAGE[,KITCHEN_SINK_IMAGE]`, e.g. postgres:17=registry.example/postgres:17; repeat for more.")
	fs.StringToStringVar(&s.options.DefaultVersions, "default-version", nil,
		"The version name of each engine's default images (`ENGINE=VERSION`, e.g. postgres=16): a service asking for it, "+
			"or for none, gets the default images. Unnamed: \"default\".")
}

// parseVersions reads --engine-version values into options.Versions.
func parseVersions(values []string) (map[string]map[string]engine.Images, error) {
	out := map[string]map[string]engine.Images{}
	for _, v := range values {
		engineVersion, images, ok1 := strings.Cut(v, "=")
		name, version, ok2 := strings.Cut(engineVersion, ":")
		if !ok1 || !ok2 || images == "" {
			return nil, fmt.Errorf("--engine-version %q: want ENGINE:VERSION=IMAGE[,KITCHEN_SINK_IMAGE], e.g. postgres:17=registry.example/postgres:17", v)
		}
		def, kitchen, _ := strings.Cut(images, ",")
		if out[name] == nil {
			out[name] = map[string]engine.Images{}
		}
		out[name][version] = engine.Images{Default: def, KitchenSink: kitchen}
	}
	return out, nil
}
