package controllers

import (
	"cmp"
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// DefaultDockerHostName names the DockerHost of the manager's own --docker-host.
const DefaultDockerHostName = "local"

// defaultEndpoint is Docker's default socket.
const defaultEndpoint = "unix:///var/run/docker.sock"

// implicitHost makes the DockerHost of the manager's own Docker host when there
// is none, so that a single-host setup needs no step of its own. An existing one
// is left as it is: its labels, capacity and cordon are the operator's.
type implicitHost struct {
	client         client.Client
	name, endpoint string
}

// NeedLeaderElection: every replica may make it; the first one wins.
func (i implicitHost) NeedLeaderElection() bool { return false }

func (i implicitHost) Start(ctx context.Context) error {
	h := &sandboxv1.DockerHost{
		ObjectMeta: metav1.ObjectMeta{Name: i.name, Labels: map[string]string{sandboxv1.LabelImplicitDockerHost: "true"}},
		Spec:       sandboxv1.DockerHostSpec{Endpoint: cmp.Or(i.endpoint, defaultEndpoint)},
	}
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		err := i.client.Create(ctx, h.DeepCopy())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		logf.FromContext(ctx).Error(err, "Creating the DockerHost of the manager's own Docker host; retrying", "dockerHost", i.name)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}
