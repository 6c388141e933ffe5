package poolkey

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// poolKeyName names a pool's key Secret (by UID: a pool re-created under the
// same name has a new key).
func poolKeyName(uid types.UID) string { return "sandboxpool-" + string(uid) }

const poolKeyField = "key"

// Keys holds each pool's member key, kept in a Secret the pool controls: a
// member's password is HMAC(key, its LabelMember nonce), so no password is
// stored on the member (docker inspect shows labels) nor lost on a restart.
// Read around the cache (the manager caches only Sandboxes' Secrets).
type Keys struct {
	client client.Client
	reader client.Reader
	scheme *runtime.Scheme
	mu     sync.Mutex
	keys   map[types.UID][]byte
}

func New(c client.Client, reader client.Reader, scheme *runtime.Scheme) *Keys {
	return &Keys{client: c, reader: reader, scheme: scheme, keys: map[types.UID][]byte{}}
}

// Ensure returns the pool's key, creating its Secret on first use.
func (k *Keys) Ensure(ctx context.Context, pool *sandboxv1.SandboxPool) ([]byte, error) {
	key, err := k.get(ctx, pool.Namespace, pool.UID)
	if err == nil || !apierrors.IsNotFound(err) {
		return key, err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: poolKeyName(pool.UID),
		Labels: map[string]string{host.LabelPool: pool.Name}}, Data: map[string][]byte{poolKeyField: b}}
	if err := controllerutil.SetControllerReference(pool, s, k.scheme); err != nil {
		return nil, err
	}
	if err := k.client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the pool's key Secret: %w", err)
	}
	return k.get(ctx, pool.Namespace, pool.UID)
}

// get reads a pool's key (remembered once read: a key never changes).
func (k *Keys) get(ctx context.Context, namespace string, uid types.UID) ([]byte, error) {
	k.mu.Lock()
	key, ok := k.keys[uid]
	k.mu.Unlock()
	if ok {
		return key, nil
	}
	s := &corev1.Secret{}
	if err := k.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: poolKeyName(uid)}, s); err != nil {
		return nil, err
	}
	if len(s.Data[poolKeyField]) < 16 {
		return nil, fmt.Errorf("the pool's key Secret %s has no key", s.Name)
	}
	k.mu.Lock()
	k.keys[uid] = s.Data[poolKeyField]
	k.mu.Unlock()
	return s.Data[poolKeyField], nil
}

func (k *Keys) Forget(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.keys, uid)
}

// MemberPassword is the password of the member carrying labels.
func (k *Keys) MemberPassword(ctx context.Context, namespace string, labels map[string]string) (string, error) {
	key, err := k.get(ctx, namespace, types.UID(labels[host.LabelPoolUID]))
	if err != nil {
		return "", fmt.Errorf("reading the key of pool %s: %w", labels[host.LabelPool], err)
	}
	return DerivePassword(key, labels[host.LabelMember]), nil
}

// DerivePassword is as long and as random as engine.NewPassword's.
func DerivePassword(key []byte, nonce string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(nonce))
	return hex.EncodeToString(mac.Sum(nil))[:48]
}
