package sandbox

import (
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/roboco-sandbox/sandbox-controller/internal/class"
	"github.com/roboco-sandbox/sandbox-controller/internal/kit"
	"github.com/roboco-sandbox/sandbox-controller/internal/poolkey"
)

// defaults fills what the caller left unset from the manager.
func (r *Reconciler) defaults(mgr ctrl.Manager) error {
	if r.own == nil {
		r.own = newOwnActions()
		r.Driver = r.own.wrap(r.Driver)
	}
	r.recalls = newRecalls()
	if r.PoolKeys == nil {
		r.PoolKeys = poolkey.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme())
	}
	if r.PokePool == nil {
		r.PokePool = func(types.NamespacedName) {}
	}
	secrets, err := newForeignSecrets(mgr, r.Enqueue)
	if err != nil {
		return err
	}
	r.secrets = secrets
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("sandbox-controller")
	}
	r.Recorder = kit.Bounded(r.Recorder)
	if r.MaxConcurrentReconciles == 0 {
		r.MaxConcurrentReconciles = 16
	}
	if r.Class == nil {
		r.Class = class.New(r.Options, r.Client, r.APIReader, r.Driver)
	}
	return nil
}
