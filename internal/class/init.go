package class

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
	"github.com/roboco-sandbox/sandbox-controller/internal/options"
)

// InitError says a service's init scripts cannot be had (their ConfigMap or
// Secret missing, a key no engine runs, too many keys or bytes, a total time
// above the operator's): the Sandbox waits, InitFailed, until they change.
type InitError struct{ msg string }

func (e InitError) Error() string { return e.msg }

// initFileMode: the scripts are read by the engine's own user.
const initFileMode = 0o444

// withInit adds svc's init scripts to the container spec (files under
// engine.InitDir, their hash as host.LabelInit) and says which to run, and
// the seed's total time (see initData for where the scripts are read). An
// InitError leaves spec as it was.
func (r *Resolver) withInit(ctx context.Context, namespace string, svc sandboxv1.ServiceSpec, e engine.Engine, spec *dd.ContainerSpec) ([]string, time.Duration, error) {
	if svc.Init == nil {
		return nil, 0, nil
	}
	bounds := r.Options.InitBounds()
	total, err := seedTime(e, svc.Init, bounds)
	if err != nil {
		return nil, 0, err
	}
	data, source, err := r.initData(ctx, namespace, svc.Init)
	if err != nil {
		return nil, 0, err
	}
	if len(data) > bounds.MaxScripts {
		return nil, 0, InitError{fmt.Sprintf("%s has %d keys; the most allowed is %d (--init-max-scripts)", source, len(data), bounds.MaxScripts)}
	}
	keys, other := engine.InitKeys(e, slices.Collect(maps.Keys(data)))
	if other != "" {
		return nil, 0, InitError{fmt.Sprintf("%s: key %s is no init script: keys must end in %s (run by postgres, redis, mongo)",
			source, other, strings.Join(engine.InitSuffixes(), ", "))}
	}
	h := sha256.New()
	size := int64(0)
	files := make([]dd.File, 0, len(keys))
	for _, k := range keys {
		size += int64(len(data[k]))
		files = append(files, dd.File{Path: engine.InitDir + k, Mode: initFileMode, Content: data[k]})
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", k, len(data[k]))
		h.Write(data[k])
	}
	if size > bounds.MaxBytes {
		return nil, 0, InitError{fmt.Sprintf("%s: the %s scripts are %d bytes; the most allowed is %d (--init-max-bytes)", source, e.Name(), size, bounds.MaxBytes)}
	}
	spec.Files = append(spec.Files, files...)
	if len(keys) > 0 {
		spec.Labels[host.LabelInit] = hex.EncodeToString(h.Sum(nil))[:16]
	}
	return keys, total, nil
}

// seedTime is the seed's total time: init.timeout, or the default, within
// the operator's --init-max-timeout.
func seedTime(e engine.Engine, init *sandboxv1.ServiceInit, bounds options.InitBounds) (time.Duration, error) {
	var asked *time.Duration
	if init.Timeout != nil {
		asked = &init.Timeout.Duration
	}
	total, ok := bounds.Timeout(asked)
	if !ok {
		return 0, InitError{fmt.Sprintf("%s asks for init.timeout %s; the most allowed is %s (--init-max-timeout)", e.Name(), total, bounds.MaxTimeout)}
	}
	return total, nil
}

// initData reads the ConfigMap's (or Secret's) data, and names it: a
// ConfigMap's from the API server once per version (initCache), a Secret's
// on every call (only the manager's own Secrets are watched).
func (r *Resolver) initData(ctx context.Context, namespace string, init *sandboxv1.ServiceInit) (map[string][]byte, string, error) {
	if ref := init.SecretRef; ref != nil {
		s := &corev1.Secret{}
		err := r.API.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, s)
		return s.Data, "Secret " + ref.Name, missing(err, "Secret "+ref.Name, namespace)
	}
	name := init.ConfigMapRef.Name
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if data, ok := r.cachedConfigMap(ctx, key); ok {
		return data, "ConfigMap " + name, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.API.Get(ctx, key, cm)
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	if err == nil {
		r.inits.keep(key, cm.ResourceVersion, data)
	}
	return data, "ConfigMap " + name, missing(err, "ConfigMap "+name, namespace)
}

func missing(err error, what, namespace string) error {
	if apierrors.IsNotFound(err) {
		return InitError{fmt.Sprintf("init: %s not found in namespace %s; the service starts once it exists", what, namespace)}
	}
	return err
}
