package chaos

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

// The tenant's init ConfigMap and its changes.

// A slow init script, toggled by seed-slow: it blocks for longer than any
// pass may take (passLimit), taking no CPU, and within the chaos manager's
// --init-script-timeout.
const (
	tenantSlowSeedKey = "30-slow.redis"
	tenantSlowSeed    = "BLPOP sandbox-chaos-never 75"
)

// seedAction is a change of the tenant's init ConfigMap (tenant.seed).
func seedAction(kind string, weight int) tenantAction {
	return tenantAction{kind: kind, weight: weight, do: func(ctx context.Context, tn *tenant, _ *sandboxv1.Sandbox) (string, string, error) {
		done, err := tn.seed(ctx, kind)
		return done, tenantSeedConfigMap, err
	}}
}

// seed changes the tenant's init ConfigMap as kind says: a key no engine
// runs, that key removed, a script added or changed, a slow script added or
// removed, or the ConfigMap deleted.
// A ConfigMap deleted earlier is made again by any change but a deletion.
func (tn *tenant) seed(ctx context.Context, kind string) (string, error) {
	cur := &corev1.ConfigMap{}
	err := tn.k8s.Get(ctx, client.ObjectKey{Namespace: tn.r.w.ns, Name: tenantSeedConfigMap}, cur)
	switch {
	case apierrors.IsNotFound(err) && kind == "seed-delete":
		return kind, nil
	case apierrors.IsNotFound(err):
		return "seed-recreate", tn.writeSeed(ctx, map[string]string{"10-keys.redis": "SET seeded 1"})
	case err != nil:
		return kind, err
	}
	data := cur.Data
	if data == nil {
		data = map[string]string{}
	}
	switch kind {
	case "seed-bad-key":
		data["README.md"] = "notes, no engine runs this"
	case "seed-fix":
		delete(data, "README.md")
	case "seed-script":
		data["20-more.redis"] = "SET more " + strconv.Itoa(tn.rnd.IntN(1000))
	case "seed-slow":
		if _, slow := data[tenantSlowSeedKey]; slow {
			delete(data, tenantSlowSeedKey)
			return "seed-unslow", tn.writeSeed(ctx, data)
		}
		data[tenantSlowSeedKey] = tenantSlowSeed
	default:
		return kind, client.IgnoreNotFound(tn.k8s.Delete(ctx, cur))
	}
	return kind, tn.writeSeed(ctx, data)
}

// writeSeed makes or replaces the tenant's init ConfigMap with data.
func (tn *tenant) writeSeed(ctx context.Context, data map[string]string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tn.r.w.ns, Name: tenantSeedConfigMap}, Data: data}
	err := tn.k8s.Update(ctx, cm)
	if apierrors.IsNotFound(err) {
		return tn.k8s.Create(ctx, cm)
	}
	return err
}
