package controllers

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// secretName is the credentials Secret of a Sandbox.
func secretName(sb *sandboxv1.Sandbox) string { return sb.Name + "-sandbox" }

// errSecretConflict says the Secret's name is taken by a Secret this Sandbox does not own.
type errSecretConflict struct{ name string }

func (e errSecretConflict) Error() string {
	return fmt.Sprintf("Secret %s exists and is not controlled by this Sandbox: delete or rename it", e.name)
}

// reconcileSecret makes sure the credentials Secret exists, holding a password for
// every requested engine and the ROBOCO_TEST_* variables with these hosts (by engine;
// a missing host publishes the container name). It returns the passwords by engine.
// Note: passwords are created once and never rotated here; only a lost Secret leads
// to new ones (and, through the config hash, to new containers).
func (r *SandboxReconciler) reconcileSecret(ctx context.Context, sb *sandboxv1.Sandbox, hosts map[string]string) (map[string]string, error) {
	key := types.NamespacedName{Namespace: sb.Namespace, Name: secretName(sb)}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	exists := err == nil
	if exists && !metav1.IsControlledBy(secret, sb) {
		return nil, errSecretConflict{name: key.Name}
	}

	passwords := map[string]string{}
	for _, svc := range sb.Spec.Services {
		e, ok := engine.Lookup(string(svc.Engine))
		if !ok {
			continue
		}
		if pw := string(secret.Data[e.PasswordKey()]); pw != "" {
			passwords[e.Name()] = pw
			continue
		}
		pw, err := engine.NewPassword()
		if err != nil {
			return nil, err
		}
		passwords[e.Name()] = pw
	}

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
	}

	if !exists {
		if sb.Status.SecretName != "" {
			// It existed: someone deleted it. The new passwords change the containers'
			// config hash, so they are replaced to match.
			r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, "SecretRecreated", "Reconcile",
				"Secret %s was deleted: new passwords are made and the service containers replaced to match", key.Name)
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
				Labels: map[string]string{SecretLabel: sb.Name}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		}
		if err := controllerutil.SetControllerReference(sb, secret, r.Scheme); err != nil {
			return nil, err
		}
		if err := r.Create(ctx, secret); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", key.Name, err)
		}
		return passwords, nil
	}
	if !maps.EqualFunc(secret.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
		secret.Data = data
		if err := r.Update(ctx, secret); err != nil {
			return nil, fmt.Errorf("updating Secret %s: %w", key.Name, err)
		}
	}
	return passwords, nil
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
