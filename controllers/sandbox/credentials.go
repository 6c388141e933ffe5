package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/chaosplant"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
)

// errSecretConflict says the Secret's name is taken by a Secret this Sandbox does not own.
type errSecretConflict struct{ name string }

func (e errSecretConflict) Error() string {
	return fmt.Sprintf("Secret %s exists and is not controlled by this Sandbox: delete or rename it", e.name)
}

// ensureCredentials reads or makes the credentials Secret (ensureSecret). A
// Secret of its name that the Sandbox does not control stalls it, and is
// watched until it goes.
func (r *Reconciler) ensureCredentials(ctx context.Context, p *pass) (ctrl.Result, bool, error) {
	creds, err := r.ensureSecret(ctx, p.sb)
	var conflict errSecretConflict
	key := types.NamespacedName{Namespace: p.sb.Namespace, Name: p.sb.Name}
	switch {
	case errors.As(err, &conflict):
		stallAll(p.sb, sandboxv1.ReasonSecretConflict, err.Error())
		r.secrets.watch(key, conflict.name)
		return ctrl.Result{RequeueAfter: kit.Jitter(kit.StalledRecheck)}, false, nil
	case err != nil:
		return ctrl.Result{}, false, err
	}
	r.secrets.stop(key)
	p.creds = creds
	return ctrl.Result{}, true, nil
}

// ensureSecret reads the credentials Secret, or creates it, so that every service's
// password is stored before any container is made with it. Passwords are created
// once and never rotated here; only a lost Secret leads to new ones (and, through
// the containers' fingerprint, to new containers). The first Secret holds, for
// each service a pool member is reserved for, that member's own password.
func (r *Reconciler) ensureSecret(ctx context.Context, sb *sandboxv1.Sandbox) (*credentials, error) {
	key := types.NamespacedName{Namespace: sb.Namespace, Name: sandboxv1.SecretName(sb)}
	secret := &corev1.Secret{}
	var err error = apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	if !r.neverMade(ctx, sb, key) {
		err = r.APIReader.Get(ctx, key, secret)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	exists := err == nil
	if exists && !metav1.IsControlledBy(secret, sb) {
		if dropped, err := dropLeftover(ctx, r.Client, r.APIReader, secret); err != nil || !dropped {
			return nil, cmp.Or(err, error(errSecretConflict{name: key.Name}))
		}
		secret, exists = &corev1.Secret{}, false
	}
	creds := &credentials{passwords: map[string]string{}, secret: secret, inSecret: map[string]bool{}}
	var kept map[string]string
	if !exists && sb.Status.SecretName == "" {
		if creds.reserved, kept, err = r.reserve(ctx, sb); err != nil {
			return nil, err
		}
	}
	stored := secret.Data
	if chaosplant.FirstSight(chaosplant.PasswordOnRestart, string(sb.UID)) {
		stored = nil
	}
	if err := creds.choose(sb, stored, kept, exists); err != nil {
		r.unreserve(ctx, creds.reserved)
		return nil, err
	}
	if !exists {
		if err := r.newSecret(sb, key, creds); err != nil {
			r.unreserve(ctx, creds.reserved)
			return nil, err
		}
		if len(creds.reserved) > 0 {
			r.createBeside(ctx, creds)
			return creds, nil
		}
		if err := r.Create(ctx, creds.secret); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		return creds, nil
	}
	return creds, r.publishSecret(ctx, sb, creds)
}

// choose sets each service's password: a reserved member's own, one kept from
// a claim, the one stored in the Secret, else a new one.
func (creds *credentials) choose(sb *sandboxv1.Sandbox, stored map[string][]byte, kept map[string]string, exists bool) error {
	for _, svc := range sb.Spec.Services {
		e, ok := engine.Lookup(string(svc.Engine))
		if !ok {
			continue
		}
		if m, ok := creds.reserved[e.Name()]; ok {
			creds.passwords[e.Name()] = m.Password
			continue
		}
		if pw, ok := kept[e.Name()]; ok {
			creds.passwords[e.Name()] = pw
			continue
		}
		creds.passwords[e.Name()] = string(stored[e.PasswordKey()])
		creds.inSecret[e.Name()] = exists && creds.passwords[e.Name()] != ""
		if creds.passwords[e.Name()] == "" {
			var err error
			if creds.passwords[e.Name()], err = engine.NewPassword(); err != nil {
				return err
			}
		}
	}
	return nil
}

// createBeside creates a first Secret that holds reserved members' own
// passwords while the pass renames them: a claim waits on one of the two, not
// both. The pass waits for it (made) before it reports anything; a pass that
// finds the members renamed and no Secret makes it again with their
// passwords (renamedClaims), and a member not claimed is removed (unreserve).
func (r *Reconciler) createBeside(ctx context.Context, creds *credentials) {
	done := make(chan error, 1)
	creds.pending = done
	secret := creds.secret // Note: the pass reads it only after made.
	go func() {
		chaosplant.Hold(chaosplant.AfterClaimRenamedNoSecret)
		err := r.Create(ctx, secret)
		if err != nil {
			err = fmt.Errorf("creating Secret %s: %w", secret.Name, err)
		} else {
			chaosplant.CrashAfter(chaosplant.AfterClaimSecret)
		}
		done <- err
	}()
}

// newSecret is the Secret of creds' passwords, not yet created.
func (r *Reconciler) newSecret(sb *sandboxv1.Sandbox, key types.NamespacedName, creds *credentials) error {
	if sb.Status.SecretName != "" {
		// It existed: someone deleted it. The new passwords change the containers'
		// fingerprint, so they are replaced to match.
		r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.EventSecretRecreated, sandboxv1.ActionReconcile,
			"Secret %s was deleted: new passwords are made and the service containers replaced to match", key.Name)
	}
	creds.secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: map[string]string{SecretLabel: string(sb.UID)}},
		Type:       corev1.SecretTypeOpaque,
		Data:       secretData(sb, creds.passwords),
	}
	if err := controllerutil.SetControllerReference(sb, creds.secret, r.Scheme); err != nil {
		return err
	}
	r.recalls.secretTried(sb)
	return nil
}

// neverMade says whether a new Sandbox's Secret is known absent without asking
// the API server: status names none, no pass of this manager tried to make it,
// and the cache of the manager's Secrets (listed afresh at start, so it holds
// what a killed predecessor made) has none. A Secret of that name the manager
// did not make fails the create, and the next pass reads it.
func (r *Reconciler) neverMade(ctx context.Context, sb *sandboxv1.Sandbox, key types.NamespacedName) bool {
	if sb.Status.SecretName != "" || r.recalls.triedSecret(sb) {
		return false
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return apierrors.IsNotFound(r.Get(ctx, key, m))
}

// publishSecret brings the Secret's data up to date with the passwords and the
// hosts status holds (on the default bridge, IPs known only after start).
func (r *Reconciler) publishSecret(ctx context.Context, sb *sandboxv1.Sandbox, creds *credentials) error {
	data := secretData(sb, creds.passwords)
	if maps.EqualFunc(creds.secret.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		return nil
	}
	creds.secret.Data = data
	if err := r.Update(ctx, creds.secret); err != nil {
		return fmt.Errorf("updating Secret %s: %w", creds.secret.Name, err)
	}
	return nil
}

// secretData is the ROBOCO_TEST_* variables of every service: its password, and its
// host from status (the container's DNS name until status knows better).
func secretData(sb *sandboxv1.Sandbox, passwords map[string]string) map[string][]byte {
	hosts := hostsOf(sb)
	data := map[string][]byte{}
	for name, pw := range passwords {
		e, _ := engine.Lookup(name)
		host := hosts[name]
		if host == "" {
			host = engine.HostName(e, sb.Spec.AgentID)
		}
		for k, v := range e.Publish(host, pw) {
			data[k] = []byte(v)
		}
		if keys, ok := sandboxv1.KeysOf(sandboxv1.Engine(name)); ok && sb.Spec.ConventionalURLs {
			data[keys.ConventionalURL] = data[keys.URL]
		}
	}
	return data
}

// hostsOf returns the hosts to publish that are not names on the service network:
// IPs of services on Docker's default bridge. (A status written before long names
// got their alias holds the container name, which is not to be published again.)
func hostsOf(sb *sandboxv1.Sandbox) map[string]string {
	hosts := map[string]string{}
	for _, s := range sb.Status.Services {
		e, ok := engine.Lookup(string(s.Engine))
		if s.Host != "" && s.Host != s.ContainerName && (!ok || s.Host != engine.HostName(e, sb.Spec.AgentID)) {
			hosts[string(s.Engine)] = s.Host
		}
	}
	return hosts
}

// SecretLabel marks the credentials Secrets, so the manager caches only those
// (CacheOptions selects on the key alone). Its value is the Sandbox's UID, which
// always fits a label value; releases before it wrote the Sandbox's name, which
// does not when longer than 63 characters.
const SecretLabel = "sandbox.roboco.io/sandbox"

// credentials are a Sandbox's passwords by engine, and the Secret that holds them
// as it stands on the API server.
type credentials struct {
	passwords map[string]string
	secret    *corev1.Secret
	// reserved are the pool members whose own passwords the Secret was made
	// with this pass, by engine: their services claim them with a rename.
	reserved map[string]host.Member
	// pending, when set, ends with the create of the Secret, which runs
	// beside the reserved members' renames; made waits for it.
	pending chan error
	err     error
	// inSecret are the engines whose password was read from the Sandbox's
	// own Secret (controlled by its UID), not made or derived this pass: a
	// member answering to one was claimed by this Sandbox (see provenLost).
	inSecret map[string]bool
}

// made waits for the Secret's create when it runs beside the pass, and says
// whether the Secret was made (every later call says the same). Nothing is
// reported Ready, and the Secret is not published to, before it returns nil.
func (c *credentials) made() error {
	if c.pending != nil {
		c.err, c.pending = <-c.pending, nil
	}
	return c.err
}
