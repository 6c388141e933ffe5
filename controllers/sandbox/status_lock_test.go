package sandbox_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ct "github.com/roboco-sandbox/sandbox-controller/controllers/controllertest"
)

// tenantEdits is a manager's client before whose first Ready status write of
// the Sandbox named name the tenant labels that Sandbox: its spec and metadata
// move between the pass's read and its write, its status does not.
type tenantEdits struct {
	client.Client
	name   string
	edited atomic.Bool
}

func (t *tenantEdits) Status() client.SubResourceWriter {
	return tenantEditsStatus{t.Client.Status(), t}
}

type tenantEditsStatus struct {
	client.SubResourceWriter
	t *tenantEdits
}

func (w tenantEditsStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	sb, ok := obj.(*sandboxv1.Sandbox)
	if ok && sb.Name == w.t.name && meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1.ConditionReady) && w.t.edited.CompareAndSwap(false, true) {
		edit := &sandboxv1.Sandbox{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sb), edit)).To(Succeed())
		edit.Labels = map[string]string{"team": "edited-mid-pass"}
		Expect(k8sClient.Update(ctx, edit)).To(Succeed())
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

var _ = Describe("Status writes conditional on what the pass read", func() {
	It("still publishes a pass's status when only the tenant's labels moved meanwhile: no pass is dropped for it", func() {
		host := ct.NewHost()
		ns := ct.NewNamespace()
		sb := ct.NewSandbox(ns, "relabelled", "relabelled-1", "redis")
		te := &tenantEdits{name: sb.Name}
		newClient := func(cfg *rest.Config, opts client.Options) (client.Client, error) {
			c, err := client.New(cfg, opts)
			te.Client = c
			return te, err
		}
		dropped := map[string]string{"outcome": "dropped"}
		races := ct.MetricValue("sandbox_status_conflicts_total", dropped)
		ct.StartManagerClient(env.Config, host, ct.Setup{Options: ct.TestOptions(), Sweep: true, HostIdentitySettle: time.Millisecond}, ct.CacheOptions(), newClient)
		Expect(k8sClient.Create(ctx, sb)).To(Succeed())

		ct.WaitReady(sb)
		Expect(te.edited.Load()).To(BeTrue(), "the tenant's edit never came between a read and a write: the spec tested nothing")
		Expect(ct.Get(sb).Labels).To(HaveKeyWithValue("team", "edited-mid-pass"))
		Expect(ct.MetricValue("sandbox_status_conflicts_total", dropped)).To(Equal(races), "a label edit is no newer status: nothing to drop")
	})
})
