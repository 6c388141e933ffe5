package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Images are the engine test images that hack/images.sh builds and serves from the
// local registry, by engine name ("postgres"); KitchenSink holds only the engines
// that have a kitchen-sink image.
type Images struct {
	Plain, KitchenSink map[string]string
}

// EngineImages reads the images from `hack/images.sh --print`, which builds nothing.
func EngineImages() (Images, error) {
	out, err := exec.Command(filepath.Join(Root(), "hack", "images.sh"), "--print").Output()
	if err != nil {
		return Images{}, fmt.Errorf("hack/images.sh --print: %w", err)
	}
	return parseImages(out)
}

// parseImages reads KEY=ref lines: <ENGINE>_IMAGE is the plain image of an
// engine, <ENGINE>_KITCHEN_IMAGE its kitchen-sink image.
func parseImages(out []byte) (Images, error) {
	img := Images{Plain: map[string]string{}, KitchenSink: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, ref, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || ref == "" {
			continue
		}
		if engine, ok := strings.CutSuffix(key, "_KITCHEN_IMAGE"); ok {
			img.KitchenSink[strings.ToLower(engine)] = ref
		} else if engine, ok := strings.CutSuffix(key, "_IMAGE"); ok {
			img.Plain[strings.ToLower(engine)] = ref
		}
	}
	if len(img.Plain) == 0 {
		return Images{}, fmt.Errorf("hack/images.sh --print names no image: %q", out)
	}
	return img, nil
}
