package statusmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// A standby replica reports no Sandbox series; once elected it reports them.
func TestStatusCollectorOnlyWhenElected(t *testing.T) {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "be"}}
	sb.Status.Conditions = []metav1.Condition{{Type: sandboxv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	reader := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(sb).Build()
	elected := make(chan struct{})
	c := newStatusCollector(reader, elected)
	count := func() int {
		ch := make(chan prometheus.Metric, 100)
		c.Collect(ch)
		close(ch)
		return len(ch)
	}
	if n := count(); n != 0 {
		t.Fatalf("a standby reported %d series", n)
	}
	close(elected)
	// One condition: its status and transition series, plus sandbox_sandboxes by True, False, Unknown.
	if n := count(); n != 5 {
		t.Fatalf("the leader reported %d series, want 5", n)
	}
}
