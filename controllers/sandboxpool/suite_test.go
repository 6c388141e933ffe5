package sandboxpool_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The specs of the SandboxPool reconciler, on a control plane of their own (the harness's);
// package sandboxpool's plain tests share the test binary.
var (
	env       *testenv.Env
	k8sClient client.Client
	ctx       = context.Background()
)

func TestSandboxPool(t *testing.T) { ct.RunSuite(t, "SandboxPool reconciler") }

var _ = BeforeSuite(func() {
	ct.StartControlPlane()
	env, k8sClient = ct.Env(), ct.Client()
})

var _ = AfterSuite(ct.StopControlPlane)
