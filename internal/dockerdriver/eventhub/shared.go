package eventhub

import (
	"context"
	"sync"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// Shared is a Docker host's one event stream, shared by its consumers (the
// Sandbox watch and the sweep), opened by the first to subscribe.
//
// Note: a consumer subscribes before the hub starts, so it is owed every event from
// the start of the stream on, and lists what it needs only after that: nothing
// falls between its list and its first event.
type Shared struct {
	hub  *Hub
	once sync.Once
	err  error
}

// NewShared is the shared stream of driver's host, not opened yet.
func NewShared(driver dd.Driver) *Shared { return &Shared{hub: New(driver)} }

// Subscribe adds a consumer and makes sure the stream runs; it stops when ctx (the
// consumers' common lifetime: the leader's) ends.
func (e *Shared) Subscribe(ctx context.Context, name string, buffer int) (<-chan dd.Event, error) {
	ch := e.hub.Subscribe(ctx, name, buffer)
	e.once.Do(func() {
		if e.err = e.hub.Start(ctx); e.err == nil {
			context.AfterFunc(ctx, e.hub.Stop)
		}
	})
	return ch, e.err
}
