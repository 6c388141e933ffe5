package drivertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// manifestKey returns "name:reference" for /v2/<name>/manifests/<reference>.
func manifestKey(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "/manifests/")
	if i < 0 {
		return "", false
	}
	return rest[:i] + ":" + rest[i+len("/manifests/"):], true
}

type dockerRegistry struct {
	env  *dockerEnv
	srv  *httptest.Server
	host string

	mu    sync.Mutex
	pulls map[string]int
	holds map[string]chan struct{}
}

func (r *dockerRegistry) newRef(name string) string {
	return fmt.Sprintf("%s/sdt/%s-%s:v1", r.host, name, randomHex(4))
}

func (r *dockerRegistry) MissingTag(t *testing.T, name string) string {
	return strings.TrimSuffix(r.Push(t, name), ":v1") + ":absent"
}

func (r *dockerRegistry) key(ref string) string {
	return strings.TrimPrefix(ref, r.host+"/")
}

func (r *dockerRegistry) Push(t *testing.T, name string) string {
	t.Helper()
	ref := r.newRef(name)
	cli := r.env.fx.Client
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.env.mu.Lock()
	r.env.images = append(r.env.images, ref)
	r.env.mu.Unlock()
	// A fresh image (busybox plus a nonce), so that the pull really
	// downloads a layer instead of finding it present.
	r.env.fx.importImage(t, ctx, ref, []string{"ENV PATH=/bin", "LABEL " + TestLabel + "=" + r.env.fx.RunID},
		map[string][]byte{"nonce": []byte(randomHex(16))})
	// Docker 20.10 refuses a push without an X-Registry-Auth header
	// ("Bad parameters and missing X-Registry-Auth"): send empty credentials.
	resp, err := cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if err := resp.Wait(ctx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	// Untag locally, so the driver has to pull it.
	if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil {
		t.Fatalf("untag %s: %v", ref, err)
	}
	r.mu.Lock()
	r.pulls[r.key(ref)] = 0
	r.mu.Unlock()
	return ref
}

func (r *dockerRegistry) Pulls(ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pulls[r.key(ref)]
}

func (r *dockerRegistry) Hold(t *testing.T, ref string) func() {
	ch := make(chan struct{})
	r.mu.Lock()
	r.holds[r.key(ref)] = ch
	r.mu.Unlock()
	release := sync.OnceFunc(func() {
		r.mu.Lock()
		delete(r.holds, r.key(ref))
		r.mu.Unlock()
		close(ch)
	})
	t.Cleanup(release)
	return release
}
