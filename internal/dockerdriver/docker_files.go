package dockerdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
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

// PutFiles writes files into container nameOrID; see Driver.PutFiles.
func (d *Docker) PutFiles(ctx context.Context, nameOrID string, files []File) error {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	return expired(wrap("copy files to", nameOrID, d.copyFiles(ctx, nameOrID, files)), "copy files to", nameOrID)
}

// ReadFile reads the file at path in container nameOrID; see Driver.ReadFile.
func (d *Docker) ReadFile(ctx context.Context, nameOrID, path string) ([]byte, error) {
	ctx, cancel, expired := Bound(ctx, d.opts.callTimeout)
	defer cancel()
	content, err := d.readFile(ctx, nameOrID, path)
	return content, expired(wrap("copy file from", nameOrID, err), "copy file from", nameOrID)
}

// maxReadFile bounds what ReadFile reads: it reads small records, never data.
const maxReadFile = 1 << 20

func (d *Docker) readFile(ctx context.Context, nameOrID, path string) ([]byte, error) {
	res, err := d.cli.CopyFromContainer(ctx, nameOrID, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Content.Close() }()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("reading the archive of %s: %w", path, err)
	}
	if h.Typeflag != tar.TypeReg || h.Size > maxReadFile {
		return nil, NewError("copy file from", nameOrID, ErrInvalid, fmt.Errorf("%s is not a regular file of at most %d bytes", path, maxReadFile))
	}
	return io.ReadAll(tr)
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
