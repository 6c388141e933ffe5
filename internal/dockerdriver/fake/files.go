package fake

import (
	"context"
	"fmt"
	"slices"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// PutFiles writes files into a container in any state; see dd.Driver.PutFiles.
func (f *Driver) PutFiles(ctx context.Context, nameOrID string, files []dd.File) error {
	if err := f.enter(ctx, VerbPutFiles, f.refsOf(nameOrID)...); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return noSuchContainer(ops[VerbPutFiles], nameOrID)
	}
	c.write(files)
	return nil
}

// ReadFile reads a file of a container; see dd.Driver.ReadFile.
func (f *Driver) ReadFile(ctx context.Context, nameOrID, path string) ([]byte, error) {
	if err := f.enter(ctx, VerbReadFile, f.refsOf(nameOrID)...); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.resolve(nameOrID)
	if c == nil {
		return nil, noSuchContainer(ops[VerbReadFile], nameOrID)
	}
	content, ok := c.files[path]
	if !ok {
		return nil, dd.NewError(ops[VerbReadFile], nameOrID, dd.ErrNotFound,
			fmt.Errorf("Error response from daemon: Could not find the file %s in container %s", path, nameOrID))
	}
	return slices.Clone(content), nil
}
