package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The face's specs: those that need several reconcilers to agree (a fleet of
// hosts, Leases, the instance, the Secret cache, a host down, pinned admission,
// SandboxPolicy, SandboxQuota). Each reconciler's own specs live beside it.
var (
	env       *testenv.Env
	k8sClient client.Client
	ctx       = context.Background()
)

func TestControllers(t *testing.T) { ct.RunSuite(t, "Reconcilers together") }

var _ = BeforeSuite(func() {
	ct.StartControlPlane()
	env, k8sClient = ct.Env(), ct.Client()
})

var _ = AfterSuite(ct.StopControlPlane)
