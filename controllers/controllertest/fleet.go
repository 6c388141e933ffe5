package controllertest

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// FleetOf runs a manager whose own Docker host (DockerHost local) is local and
// which dials the fake behind each other DockerHost by its endpoint
// (unix:///fake/<name>), until the returned stop is called (or the spec ends).
func FleetOf(local *EngineSim, others map[string]*EngineSim) (stop func()) {
	dial := func(_ context.Context, h *sandboxv1.DockerHost) (dd.Driver, error) {
		for name, sim := range others {
			if h.Spec.Endpoint == "unix:///fake/"+name {
				return sim, nil
			}
		}
		return nil, fmt.Errorf("no fake at %s", h.Spec.Endpoint)
	}
	return StartManagerWith(env.Config, local, Setup{Options: TestOptions(), Sweep: true,
		HostIdentitySettle: time.Millisecond, Dial: dial})
}

// RegisterHost applies a DockerHost for the fake name, removed when the spec ends
// (its in-use finalizer stripped, so no later spec sees it).
func RegisterHost(name string, labels map[string]string, capacity *int32) *sandboxv1.DockerHost {
	h := &sandboxv1.DockerHost{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: sandboxv1.DockerHostSpec{Endpoint: "unix:///fake/" + name}}
	if capacity != nil {
		h.Spec.Capacity = &sandboxv1.DockerHostCapacity{Sandboxes: capacity}
	}
	gomega.Expect(k8sClient.Create(ctx, h)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func() {
		_ = k8sClient.Delete(ctx, h)
		gomega.Eventually(func() error {
			cur := &sandboxv1.DockerHost{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(h), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Finalizers = nil
			_ = k8sClient.Patch(ctx, cur, patch)
			return fmt.Errorf("DockerHost %s still exists", name)
		}).Should(gomega.Succeed())
	})
	return h
}

// Poke changes an annotation, which makes the Sandbox's host look at it again.
func Poke(sb *sandboxv1.Sandbox) {
	cur := Get(sb)
	patch := client.MergeFrom(cur.DeepCopy())
	metav1.SetMetaDataAnnotation(&cur.ObjectMeta, "test.sandbox.roboco.io/poke", time.Now().String())
	gomega.ExpectWithOffset(1, k8sClient.Patch(ctx, cur, patch)).To(gomega.Succeed())
}

// DockerHost reads the DockerHost name.
func DockerHost(name string) *sandboxv1.DockerHost {
	h := &sandboxv1.DockerHost{}
	gomega.ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Name: name}, h)).To(gomega.Succeed())
	return h
}

// SetHost edits the DockerHost name's spec, retrying on conflicts (its
// controllers write its status meanwhile).
func SetHost(name string, edit func(*sandboxv1.DockerHostSpec)) {
	gomega.EventuallyWithOffset(1, func() error {
		h := DockerHost(name)
		edit(&h.Spec)
		return k8sClient.Update(ctx, h)
	}).Should(gomega.Succeed())
}

// DeleteHost deletes a DockerHost and waits until it is gone; forced strips
// its in-use finalizer, as an operator who gave up on the host would.
func DeleteHost(name string, forced bool) {
	gomega.ExpectWithOffset(1, k8sClient.Delete(ctx, DockerHost(name))).To(gomega.Succeed())
	gomega.EventuallyWithOffset(1, func() bool {
		h := &sandboxv1.DockerHost{}
		err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, h)
		if err == nil && forced {
			patch := client.MergeFrom(h.DeepCopy())
			h.Finalizers = nil
			_ = k8sClient.Patch(ctx, h, patch)
		}
		return apierrors.IsNotFound(err)
	}, 45*time.Second).Should(gomega.BeTrue(), "DockerHost %s not gone", name)
}
