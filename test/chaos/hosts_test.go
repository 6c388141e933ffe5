package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The suite registers two DockerHosts, as a fleet's operator does: main, the
// suite's daemon behind its proxy, where every Sandbox and pool of a run is
// pinned; and other, a second daemon with nothing bound to it. other is where
// the endpoint-switch fault points main, and the second host of the replicas'
// fair share: with two replicas each drives one, and a replica that comes and
// goes hands main over without the other one restarting (see replicas_test.go).
// Note: main sorts after other, so a replica driving both gives main up first.

func (h *harness) mainHost() string  { return "chaos-" + h.id + "-main" }
func (h *harness) otherHost() string { return "chaos-" + h.id + "-a" }

// startOther starts the second daemon (no images: nothing may be made there)
// and the proxy in front of it, which counts what reaches it.
func (h *harness) startOther() error {
	h.other = newDaemon(h.id+"b", h.dir)
	if err := h.other.CreateBridge(); err != nil {
		return err
	}
	if err := h.other.Start(h.other.DataRoot); err != nil {
		return err
	}
	var err error
	h.otherProxy, err = startProxy(filepath.Join(h.dir, "other.sock"), h.other.Socket)
	return err
}

// registerHosts registers both DockerHosts, and waits for both to be Ready.
func (h *harness) registerHosts(ctx context.Context) error {
	for name, socket := range map[string]string{h.mainHost(): h.proxy.socket, h.otherHost(): h.otherProxy.socket} {
		dh := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{testLabel: h.id}},
			Spec: sandboxv1.DockerHostSpec{Endpoint: "unix://" + socket}}
		if err := h.k8s.Create(ctx, dh); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// dockerHost reads a DockerHost.
func (h *harness) dockerHost(ctx context.Context, name string) (*sandboxv1.DockerHost, error) {
	dh := &sandboxv1.DockerHost{}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return dh, h.k8s.Get(cctx, types.NamespacedName{Name: name}, dh)
}

// setEndpoint points DockerHost name at socket, as `kubectl patch` would.
func (h *harness) setEndpoint(ctx context.Context, name, socket string) error {
	patch := fmt.Sprintf(`{"spec":{"endpoint":%q}}`, "unix://"+socket)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := h.k8s.Patch(cctx, &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch)))
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		sleep(ctx, time.Second)
	}
}

// mutations are the calls among calls that change a Docker host.
func mutations(calls map[string]int) []string {
	var out []string
	for k, v := range calls {
		if k == "POST /containers/create" || k == "DELETE /containers/{id}" || k == "POST /images/create (pull)" ||
			strings.HasSuffix(k, "/stop") || strings.HasSuffix(k, "/kill") || strings.HasSuffix(k, "/rename") {
			out = append(out, fmt.Sprintf("%s ×%d", k, v))
		}
	}
	return out
}
