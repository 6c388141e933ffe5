package class

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// initUnused is how long the scripts of a ConfigMap no pass asked for are kept.
const initUnused = 10 * time.Minute

// initCacheBytes bounds what the cache holds in all, whatever tenants write:
// past it the least lately used go (read again when asked).
const initCacheBytes = 32 << 20

// initCache keeps the scripts last read of each ConfigMap with the
// resourceVersion they were read at: a pass compares it with the ConfigMap's
// metadata in the manager's cache (watched as metadata only) and reads the
// data from the API server only when it changed, not on every pass.
type initCache struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]initEntry
	bytes   int
}

type initEntry struct {
	version string
	data    map[string][]byte
	used    time.Time
	size    int
}

// cachedConfigMap is the data of the ConfigMap key at the version the manager's
// cache shows now; false when it was not read at that version.
func (r *Resolver) cachedConfigMap(ctx context.Context, key types.NamespacedName) (map[string][]byte, bool) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := r.Cache.Get(ctx, key, m); err != nil {
		return nil, false // Note: one just made may not be cached yet: read live.
	}
	r.inits.mu.Lock()
	defer r.inits.mu.Unlock()
	e, ok := r.inits.entries[key]
	if !ok || e.version != m.ResourceVersion {
		return nil, false
	}
	e.used = time.Now()
	r.inits.entries[key] = e
	return maps.Clone(e.data), true
}

// keep records the data of the ConfigMap key read at version, and forgets
// what no pass asked for lately.
func (c *initCache) keep(key types.NamespacedName, version string, data map[string][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.entries == nil {
		c.entries = map[types.NamespacedName]initEntry{}
	}
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	c.drop(key)
	for k, e := range c.entries {
		if now.Sub(e.used) > initUnused {
			c.drop(k)
		}
	}
	if size > initCacheBytes {
		return
	}
	for c.bytes+size > initCacheBytes && len(c.entries) > 0 {
		c.drop(c.leastUsed())
	}
	c.entries[key] = initEntry{version: version, data: maps.Clone(data), used: now, size: size}
	c.bytes += size
}

func (c *initCache) drop(key types.NamespacedName) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

func (c *initCache) leastUsed() types.NamespacedName {
	var oldest types.NamespacedName
	var at time.Time
	for k, e := range c.entries {
		if at.IsZero() || e.used.Before(at) {
			oldest, at = k, e.used
		}
	}
	return oldest
}
