package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// TestEngineImagesNameEveryEngine reads the real hack/images.sh: a key it renames
// would leave a suite pulling "" instead of failing here.
func TestEngineImagesNameEveryEngine(t *testing.T) {
	img, err := EngineImages()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engine.All() {
		if img.Plain[e.Name()] == "" {
			t.Errorf("no image for %s in %v", e.Name(), img.Plain)
		}
	}
	// The features suites run postgres and redis extensions from these.
	for _, name := range []string{"postgres", "redis"} {
		if img.KitchenSink[name] == "" || img.KitchenSink[name] == img.Plain[name] {
			t.Errorf("kitchen-sink image of %s: %q (plain %q)", name, img.KitchenSink[name], img.Plain[name])
		}
	}
}

func TestParseImages(t *testing.T) {
	img, err := parseImages([]byte("POSTGRES_IMAGE=r/pg:15\nPOSTGRES_KITCHEN_IMAGE=r/pgk:15\n" +
		"not a pair\nREGISTRY=r\nMONGO_IMAGE=\nREDIS_IMAGE=r/redis:7\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postgres": "r/pg:15", "redis": "r/redis:7"}
	if len(img.Plain) != len(want) || img.Plain["postgres"] != want["postgres"] || img.Plain["redis"] != want["redis"] {
		t.Errorf("plain images %v, want %v (a kitchen-sink key, another key or an empty ref is not a plain image)", img.Plain, want)
	}
	if len(img.KitchenSink) != 1 || img.KitchenSink["postgres"] != "r/pgk:15" {
		t.Errorf("kitchen-sink images %v", img.KitchenSink)
	}
	if _, err := parseImages([]byte("nothing here\n")); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("output naming no image: err %v, want one saying so", err)
	}
}

// The images' input hashes must not depend on whether mmdebstrap is
// installed yet: on a fresh machine it is installed only during the first build,
// and refs that then change make the next run rebuild every image.
func TestImageHashesDoNotDependOnMmdebstrapBeingInstalled(t *testing.T) {
	const hooks = "/usr/share/mmdebstrap"
	if _, err := os.Stat(hooks); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and mmdebstrap installed (make images installs it)")
	}
	script := filepath.Join(Root(), "hack", "images.sh")
	with, err := exec.Command(script, "--hashes").Output()
	if err != nil {
		t.Fatal(err)
	}
	// A private mount namespace hides mmdebstrap's files from this one run only.
	without, err := exec.Command("unshare", "-m", "sh", "-c", `mount -t tmpfs none "$1" && exec "$2" --hashes`, "sh", hooks, script).Output()
	if err != nil {
		t.Fatalf("images.sh --hashes without mmdebstrap's files: %v", err)
	}
	if string(with) != string(without) {
		t.Errorf("input hashes change when mmdebstrap is not installed (every image would be rebuilt):\nwith:\n%s\nwithout:\n%s", with, without)
	}
}
