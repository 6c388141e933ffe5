package sweep_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// The specs of the Orphan sweep, on a control plane of their own (the harness's);
// package sweep's plain tests share the test binary.
var (
	env       *testenv.Env
	k8sClient client.Client
	ctx       = context.Background()
)

func TestSweep(t *testing.T) { ct.RunSuite(t, "Orphan sweep") }

var _ = BeforeSuite(func() {
	ct.StartControlPlane()
	env, k8sClient = ct.Env(), ct.Client()
})

var _ = AfterSuite(ct.StopControlPlane)
