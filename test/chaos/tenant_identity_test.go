package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

// invStrip: the teardown finalizer holds a Sandbox until its containers are
// gone; stripped by a tenant, the Sandbox would vanish with them running and
// its quota room freed.
const invStrip = "a tenant cannot strip a Sandbox's teardown finalizer"

// tenantUser is who the tenant's actions are made as: bound to the
// sandbox-editor role in the run's namespace, as a team's members are.
const tenantUser = "chaos-tenant"

// actAsTenant makes the tenant's client: the suite's admin impersonating
// tenantUser, bound to config/rbac's sandbox-editor role (and ConfigMaps) in
// the namespace. guard: the API server has config/default's admission
// policies (a planted run leaves the finalizer guard out).
func (tn *tenant) actAsTenant(ctx context.Context, guard bool) error {
	h := tn.r.h
	kubectl := func(args ...string) (string, error) { return testenv.Kubectl(h.plane.kubeconfig, args...) }
	if _, err := kubectl("apply", "-f", filepath.Join(testenv.Root(), "config", "rbac", "sandbox_editor_role.yaml")); err != nil {
		return err
	}
	if guard {
		if err := applyAdmission(kubectl, filepath.Join(h.dir, "admission-"+tn.r.instance+".yaml")); err != nil {
			return err
		}
	} else if _, err := kubectl("delete", "validatingadmissionpolicybinding", "sandbox-controller-teardown-finalizers", "--ignore-not-found"); err != nil {
		return err
	}
	configMaps := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: tn.r.w.ns}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "update", "delete"}}}}
	if err := h.k8s.Create(ctx, configMaps); err != nil {
		return err
	}
	for kind, role := range map[string]string{"ClusterRole": "sandbox-editor", "Role": "configmaps"} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: tenantUser + "-" + role, Namespace: tn.r.w.ns},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenantUser}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}}
		if err := h.k8s.Create(ctx, rb); err != nil {
			return err
		}
	}
	cfg := rest.CopyConfig(h.plane.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser}
	c, err := client.New(cfg, client.Options{Scheme: h.k8s.Scheme()})
	if err != nil {
		return err
	}
	tn.k8s = c
	if guard {
		return tn.guarded(ctx)
	}
	return nil
}

// guarded waits until the API server refuses the tenant a strip: it loads
// the admission policies a moment after they are made. It tries a dry run on
// a Sandbox bound to no host's manager, then removes that.
func (tn *tenant) guarded(ctx context.Context) error {
	sb := &sandboxv1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "guard-probe", Namespace: tn.r.w.ns, Finalizers: []string{sandboxv1.SandboxFinalizer}},
		Spec: sandboxv1.SandboxSpec{AgentID: "guard-probe", Services: []sandboxv1.ServiceSpec{{Engine: sandboxv1.EngineRedis}},
			Placement: sandboxv1.Placement{DockerHost: "no-manager-has-this-host"}}}
	// Note: until the API server has loaded them, the SandboxPolicy one may
	// refuse the create itself.
	var err error
	for range 120 {
		if err = tn.r.h.k8s.Create(ctx, sb); err == nil {
			break
		}
		sleep(ctx, 500*time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer func() {
		sb.Finalizers = nil
		_ = tn.r.h.k8s.Update(ctx, sb)
		_ = tn.r.h.k8s.Delete(ctx, sb)
	}()
	for range 120 {
		cur := sb.DeepCopy()
		cur.Finalizers = nil
		if err := tn.k8s.Update(ctx, cur, client.DryRunAll); apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			return nil
		}
		sleep(ctx, 500*time.Millisecond)
	}
	return errors.New("the API server let the tenant strip a finalizer for 60 s after the admission policies were applied")
}

// applyAdmission applies the ValidatingAdmissionPolicies config/default
// renders (the SandboxPolicy networks and the teardown finalizers), written
// to file.
func applyAdmission(kubectl func(args ...string) (string, error), file string) error {
	rendered, err := kubectl("kustomize", filepath.Join(testenv.Root(), "config", "default"))
	if err != nil {
		return err
	}
	manifest, _ := testenv.AdmissionPolicies(rendered)
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		return err
	}
	_, err = kubectl("apply", "-f", file)
	return err
}

// strip removes sb's finalizers as the tenant: refused by the API server, or
// a violation.
func (tn *tenant) strip(ctx context.Context, sb *sandboxv1.Sandbox) error {
	cur := &sandboxv1.Sandbox{}
	if err := tn.k8s.Get(ctx, client.ObjectKeyFromObject(sb), cur); err != nil || len(cur.Finalizers) == 0 {
		return client.IgnoreNotFound(err)
	}
	cur.Finalizers = nil
	err := tn.k8s.Update(ctx, cur)
	switch {
	case err == nil:
		tn.r.violate(invStrip, fmt.Sprintf("%s's finalizers were removed by %s", sb.Name, tenantUser))
		return errors.New("stripped")
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		return nil // refused, as it must be
	}
	return client.IgnoreNotFound(err)
}
