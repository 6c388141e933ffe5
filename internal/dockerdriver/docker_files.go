package dockerdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// LogDriverJSONFile is the log driver of every container: the one whose size
// Docker can bound and whose tail LogsTail reads.
const LogDriverJSONFile = "json-file"

// copyFiles writes files into the created container id through Docker's
// archive API.
func (d *Docker) copyFiles(ctx context.Context, id string, files []File) error {
	if len(files) == 0 {
		return nil
	}
	archive, err := tarOf(files)
	if err != nil {
		return err
	}
	_, err = d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: archive})
	return err
}

// tarOf is an archive of files relative to /. Note: it holds no directory
// entries, so Docker makes missing parents (root, 0755) and leaves existing
// ones as they are.
func tarOf(files []File) (*bytes.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Size: int64(len(f.Content)),
			ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytes.NewReader(buf.Bytes()), nil
}

// logConfig is the json-file configuration for l.
func logConfig(l LogLimits) container.LogConfig {
	cfg := container.LogConfig{Type: LogDriverJSONFile, Config: map[string]string{}}
	if l.MaxSize != "" {
		cfg.Config["max-size"] = l.MaxSize
	}
	if l.MaxFiles > 0 {
		cfg.Config["max-file"] = strconv.Itoa(l.MaxFiles)
	}
	return cfg
}

// hardeningOf reads what a container was made with beyond its resources:
// capabilities, swap and log limits.
func hardeningOf(h *container.HostConfig, c *Container) {
	c.MemorySwapBytes = h.MemorySwap
	c.CapAdd, c.CapDrop = capNames(h.CapAdd), capNames(h.CapDrop)
	c.LogDriver = h.LogConfig.Type
	c.Log.MaxSize = h.LogConfig.Config["max-size"]
	c.Log.MaxFiles, _ = strconv.Atoi(h.LogConfig.Config["max-file"])
}

// capNames are capabilities as ContainerSpec names them: Docker reports
// CHOWN as CAP_CHOWN.
func capNames(caps []string) []string {
	var out []string
	for _, c := range caps {
		out = append(out, strings.TrimPrefix(strings.ToUpper(c), "CAP_"))
	}
	return out
}
