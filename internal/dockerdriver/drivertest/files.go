package drivertest

import (
	"testing"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// filesPutAndRead: files put into a running container are there for its
// processes and read back, in its parents made on the way, replaced by a second
// put, and read back once it exited; a missing file or container is not found.
func (c contract) filesPutAndRead(t *testing.T) {
	d, env, ctx := c.setup(t, Config{})
	s := spec(env, "files-put", Script{Sleep: Forever})
	got := mustCreate(t, ctx, d, s)
	waitState(t, ctx, d, s.Name, dd.StateRunning)
	const path = "/run/sdt-put/record"
	for _, content := range []string{"first", "second"} {
		if err := d.PutFiles(ctx, got.ID, []dd.File{{Path: path, Mode: 0o444, Content: []byte(content)}}); err != nil {
			t.Fatalf("PutFiles: %v", err)
		}
		if read, err := d.ReadFile(ctx, s.Name, path); err != nil || string(read) != content {
			t.Errorf("ReadFile = %q, %v; want %q", read, err, content)
		}
	}
	if r, err := d.Exec(ctx, s.Name, dd.ExecSpec{Cmd: env.Command(Script{Cat: []string{path}})}); err != nil || r.Stdout != "second" {
		t.Errorf("exec cat = %+v, %v; want the file put", r, err)
	}
	_, err := d.ReadFile(ctx, s.Name, "/run/sdt-put/absent")
	wantKind(t, err, dd.ErrNotFound)
	_, err = d.ReadFile(ctx, s.Name+"-absent", path)
	wantKind(t, err, dd.ErrNotFound)
	err = d.PutFiles(ctx, s.Name+"-absent", []dd.File{{Path: path, Content: []byte("x")}})
	wantKind(t, err, dd.ErrNotFound)

	exited := spec(env, "files-exited", Script{Exit: 0})
	mustCreate(t, ctx, d, exited)
	waitState(t, ctx, d, exited.Name, dd.StateExited)
	if err := d.PutFiles(ctx, exited.Name, []dd.File{{Path: path, Mode: 0o444, Content: []byte("kept")}}); err != nil {
		t.Fatalf("PutFiles into an exited container: %v", err)
	}
	if read, err := d.ReadFile(ctx, exited.Name, path); err != nil || string(read) != "kept" {
		t.Errorf("ReadFile of an exited container = %q, %v; want %q", read, err, "kept")
	}
}
