package class

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	ddfake "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

func resolver(t *testing.T) *Resolver {
	t.Helper()
	seed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "seed"},
		Data: map[string]string{"01-schema.sql": "create table t (id int);"}}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(seed).Build()
	return New(options.DefaultOptions(), c, c, ddfake.New())
}

var service = sandboxv1.ServiceSpec{Engine: "postgres",
	Resources: &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("256Mi"))},
	Init:      &sandboxv1.ServiceInit{ConfigMapRef: &sandboxv1.LocalRef{Name: "seed"}}}

// A pool's member is the service a Sandbox of its namespace asking the same
// gets, but for who it serves: its name, labels and owner label (and no
// alias), so a claim hands a Sandbox the very container it would have made.
func TestMemberIsTheSandboxServiceButForWhoItServes(t *testing.T) {
	r := resolver(t)
	ctx := context.Background()
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"},
		Spec: sandboxv1.SandboxSpec{AgentID: "agent-1", Services: []sandboxv1.ServiceSpec{service}}}
	pool := &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"},
		Spec: sandboxv1.SandboxPoolSpec{Service: service}}
	s, err := r.Sandbox(ctx, sb, service, "secret")
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Member(ctx, pool, "secret")
	if err != nil {
		t.Fatal(err)
	}
	if s.Container.Name != engine.ContainerName(s.Engine, "agent-1") || s.Container.Labels[host.LabelUID] != "uid-a" ||
		s.Container.Labels[host.LabelConfigHash] != host.Fingerprint(s.Container) || s.Container.Labels[host.LabelInit] == "" {
		t.Errorf("the Sandbox's container is not named, labelled and fingerprinted as its own: %+v", s.Container)
	}
	if m.Container.Labels[host.LabelClass] != host.ClassHash(s.Container) || m.Container.Labels[host.LabelPoolUID] != "uid-p" ||
		m.Container.OwnerLabel != host.LabelMember {
		t.Errorf("the member's labels %v do not name its pool and the Sandbox's class", m.Container.Labels)
	}
	if len(m.Init) != 1 || !strings.HasPrefix(m.Container.Files[len(m.Container.Files)-1].Path, engine.InitDir) {
		t.Errorf("the member runs no init script: %+v", m.Init)
	}
	for _, c := range []*host.Service{&s, &m} {
		c.Container.Name, c.Container.Aliases, c.Container.Labels, c.Container.OwnerLabel = "", nil, nil, ""
	}
	if !reflect.DeepEqual(s, m) {
		t.Errorf("but for who it serves, the member\n%+v\nis not the Sandbox's service\n%+v", m, s)
	}
}

// A limit past the operator's is refused, naming it, for a Sandbox and a pool alike.
func TestLimitsPastTheOperatorsAreRefused(t *testing.T) {
	r := resolver(t)
	big := service
	big.Resources = &sandboxv1.ServiceResources{Memory: ptr.To(resource.MustParse("1Ti"))}
	pool := &sandboxv1.SandboxPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: sandboxv1.SandboxPoolSpec{Service: big}}
	_, err := r.Member(context.Background(), pool, "")
	if want := "postgres asks for memory 1Ti; the most allowed is " + r.Options.MaxMemory.String(); err == nil || err.Error() != want {
		t.Fatalf("a member past --max-memory: %v, want %q", err, want)
	}
}

// countingReader counts the ConfigMaps read through it.
type countingReader struct {
	client.Reader
	configMaps int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.ConfigMap); ok {
		c.configMaps++
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A pass reads a ConfigMap's scripts from the API server once per version of
// it (its metadata in the cache says which), not on every pass, and a changed
// ConfigMap is read again.
func TestInitScriptsAreReadOncePerVersion(t *testing.T) {
	ctx := context.Background()
	seed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "seed"},
		Data: map[string]string{"01-schema.sql": "create table t (id int);"}}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(seed).Build()
	api := &countingReader{Reader: c}
	r := New(options.DefaultOptions(), c, api, ddfake.New())
	label := func() string {
		t.Helper()
		s, err := r.Service(ctx, "ns", "", service, "secret")
		if err != nil {
			t.Fatal(err)
		}
		return s.Container.Labels[host.LabelInit]
	}
	first := label()
	for range 3 {
		if label() != first {
			t.Fatal("the same ConfigMap resolved to other scripts")
		}
	}
	if api.configMaps != 1 {
		t.Errorf("4 passes over one version read the ConfigMap %d times from the API server, want 1", api.configMaps)
	}
	seed.Data["02-rows.sql"] = "insert into t values (1);"
	if err := c.Update(ctx, seed); err != nil {
		t.Fatal(err)
	}
	if label() == first {
		t.Error("a changed ConfigMap resolved to the scripts of its earlier version")
	}
	if api.configMaps != 2 {
		t.Errorf("a changed ConfigMap was read %d times in all, want 2", api.configMaps)
	}
}

// The scripts kept are bounded in all, whatever tenants write: past the bound
// the least lately used go, and a source larger than it is never kept.
func TestInitCacheIsBounded(t *testing.T) {
	var c initCache
	blob := make([]byte, 10<<20)
	for i := range 5 {
		c.keep(types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i))}, "1", map[string][]byte{"x.sql": blob})
		if c.bytes > initCacheBytes {
			t.Fatalf("after %d sources of 10 MiB the cache holds %d bytes, more than %d", i+1, c.bytes, initCacheBytes)
		}
	}
	if _, ok := c.entries[types.NamespacedName{Namespace: "ns", Name: "e"}]; !ok {
		t.Error("the latest source was not kept")
	}
	c.keep(types.NamespacedName{Namespace: "ns", Name: "huge"}, "1", map[string][]byte{"x.sql": make([]byte, initCacheBytes+1)})
	if _, ok := c.entries[types.NamespacedName{Namespace: "ns", Name: "huge"}]; ok {
		t.Error("a source larger than the bound was kept")
	}
}
