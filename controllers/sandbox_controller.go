// Package controllers holds the reconcilers that drive a Docker host toward the
// Sandbox objects: the Sandbox reconciler (this file and its steps) and its Docker
// event watch.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
)

// SandboxReconciler drives the Docker host toward each Sandbox.
type SandboxReconciler struct {
	client.Client
	// APIReader reads around the cache where a stale read could do harm (who owns a
	// container name, whether the Secret exists).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Driver    dd.Driver
	Recorder  events.EventRecorder
	Options   Options
	// MaxConcurrentReconciles bounds the workers (default 4).
	MaxConcurrentReconciles int

	pulls   *pullTracker
	requeue chan event.TypedGenericEvent[*sandboxv1.Sandbox]
}

// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sandbox.roboco.io,resources=sandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads like the table of contents of one pass; each step returns early
// when its condition already holds.
func (r *SandboxReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sb := &sandboxv1.Sandbox{}
	if err := r.Get(ctx, req.NamespacedName, sb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := logf.FromContext(ctx).WithValues("agentID", sb.Spec.AgentID)
	ctx = logf.IntoContext(ctx, log)

	if !sb.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, sb)
	}
	if err := r.ensureFinalizer(ctx, sb); err != nil {
		return ctrl.Result{}, err
	}
	expired, ttlLeft, err := r.reconcileTTL(ctx, sb)
	if err != nil || expired {
		return ctrl.Result{}, err
	}

	before := sb.DeepCopy()
	result, err := r.reconcileServices(ctx, sb)
	ownerLeft, ownerGone, ownerErr := r.reconcileOwner(ctx, sb)
	err = errors.Join(err, ownerErr)
	if perr := r.patchStatus(ctx, before, sb); perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	if ownerGone {
		return ctrl.Result{}, nil
	}
	if result, err = withOwnerDeadline(result, err, ownerLeft); err != nil {
		return ctrl.Result{}, err
	}
	if ttlLeft > 0 && (result.RequeueAfter == 0 || ttlLeft < result.RequeueAfter) {
		result.RequeueAfter = ttlLeft
	}
	return result, nil
}

// ensureFinalizer persists the finalizer before anything exists on the Docker host.
func (r *SandboxReconciler) ensureFinalizer(ctx context.Context, sb *sandboxv1.Sandbox) error {
	if controllerutil.ContainsFinalizer(sb, Finalizer) {
		return nil
	}
	patch := client.MergeFrom(sb.DeepCopy())
	controllerutil.AddFinalizer(sb, Finalizer)
	if err := r.Patch(ctx, sb, patch); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// reconcileTTL deletes a Sandbox past its ttl, or says how long it has left.
func (r *SandboxReconciler) reconcileTTL(ctx context.Context, sb *sandboxv1.Sandbox) (expired bool, left time.Duration, err error) {
	if sb.Spec.TTL == nil {
		return false, 0, nil
	}
	left = time.Until(sb.CreationTimestamp.Add(sb.Spec.TTL.Duration))
	if left > 0 {
		return false, left, nil
	}
	r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, "Expired", "Delete",
		"ttl %s has passed since creation: deleting the Sandbox", sb.Spec.TTL.Duration)
	logf.FromContext(ctx).Info("Deleting expired Sandbox", "ttl", sb.Spec.TTL.Duration)
	uid := sb.UID
	if err := r.Delete(ctx, sb, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return false, 0, fmt.Errorf("deleting expired Sandbox: %w", err)
	}
	return true, 0, nil
}

// reconcileServices provisions every service in parallel and summarizes the result
// into sb.Status.
func (r *SandboxReconciler) reconcileServices(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, error) {
	passwords, err := r.reconcileSecret(ctx, sb, hostsOf(sb))
	var conflict errSecretConflict
	if errors.As(err, &conflict) {
		stallAll(sb, sandboxv1.ReasonSecretConflict, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	if err != nil {
		return ctrl.Result{}, err
	}

	specs := make([]serviceSpec, len(sb.Spec.Services))
	for i, svc := range sb.Spec.Services {
		if specs[i], err = r.resolveService(sb, svc, passwords[string(svc.Engine)]); err != nil {
			stallAll(sb, sandboxv1.ReasonInvalidSpec, err.Error())
			r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, sandboxv1.ReasonInvalidSpec, "Validate", "%s", err.Error())
			return ctrl.Result{}, reconcile.TerminalError(err)
		}
	}

	ours, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		dockerDown(sb, err)
		return ctrl.Result{RequeueAfter: createRetry}, nil
	}
	byEngine := map[string][]dd.ContainerSummary{}
	for _, c := range ours {
		byEngine[c.Labels[LabelEngine]] = append(byEngine[c.Labels[LabelEngine]], c)
	}

	// A removed service's containers go; the others are left alone.
	for name, cs := range byEngine {
		if !slices.ContainsFunc(specs, func(s serviceSpec) bool { return s.engine.Name() == name }) {
			for _, c := range cs {
				if err := r.Driver.Remove(ctx, c.ID, r.Options.StopTimeout); err != nil {
					return ctrl.Result{}, fmt.Errorf("removing %s, no longer in spec: %w", c.Name, err)
				}
				r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, "ServiceRemoved", "Teardown",
					"removed %s: %s is no longer in spec.services", c.Name, name)
			}
		}
	}

	prev := map[string]sandboxv1.ServiceStatus{}
	for _, s := range sb.Status.Services {
		prev[string(s.Engine)] = s
	}
	results := make([]serviceResult, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			password := passwords[spec.engine.Name()]
			results[i] = r.reconcileService(ctx, sb, spec, password, prev[spec.engine.Name()], byEngine[spec.engine.Name()]).redacted(password)
		})
	}
	wg.Wait()

	wasReady := isReady(sb)
	oldConditions := conditionReasons(sb)
	summarize(sb, results)
	r.report(ctx, sb, results, wasReady, oldConditions)

	// On the default bridge, agents reach services by IP, known only now.
	if hosts := hostsOf(sb); len(hosts) > 0 {
		if _, err := r.reconcileSecret(ctx, sb, hosts); err != nil {
			return ctrl.Result{}, err
		}
	}

	result := ctrl.Result{}
	stalled := false
	for _, res := range results {
		stalled = stalled || res.stalled
		if res.requeue > 0 && (result.RequeueAfter == 0 || res.requeue < result.RequeueAfter) {
			result.RequeueAfter = res.requeue
		}
	}
	if stalled {
		return ctrl.Result{}, nil
	}
	if result.RequeueAfter == 0 {
		result.RequeueAfter = jitter(r.Options.ResyncPeriod)
	}
	return result, nil
}

// report emits events for milestones and for conditions that turned to a failure,
// once per transition rather than every pass.
func (r *SandboxReconciler) report(ctx context.Context, sb *sandboxv1.Sandbox, results []serviceResult, wasReady bool, old map[string]string) {
	log := logf.FromContext(ctx)
	for _, res := range results {
		for _, ev := range res.events {
			r.Recorder.Eventf(sb, nil, ev.eventType, ev.reason, "Reconcile", "%s", ev.message)
			log.Info("Service event", "engine", res.status.Engine, "reason", ev.reason, "message", ev.message)
		}
	}
	for _, c := range sb.Status.Conditions {
		if c.Status == "True" || !failureReasons[c.Reason] || old[c.Type] == c.Reason ||
			c.Type == sandboxv1.ConditionReady || c.Type == sandboxv1.ConditionReconciling || c.Type == sandboxv1.ConditionStalled {
			continue
		}
		sandboxMetrics.failures.WithLabelValues(c.Reason).Inc()
		r.Recorder.Eventf(sb, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
		log.Info("Sandbox condition failed", "condition", c.Type, "reason", c.Reason, "message", c.Message)
	}
	if !wasReady && isReady(sb) {
		r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, "Provisioned", "Reconcile",
			"%s ready; credentials in Secret %s", sb.Status.Engines, sb.Status.SecretName)
		log.Info("Sandbox ready", "services", sb.Status.Engines, "elapsed", time.Since(sb.CreationTimestamp.Time).Round(time.Millisecond))
	}
}

func isReady(sb *sandboxv1.Sandbox) bool {
	for _, c := range sb.Status.Conditions {
		if c.Type == sandboxv1.ConditionReady {
			return c.Status == "True"
		}
	}
	return false
}

func conditionReasons(sb *sandboxv1.Sandbox) map[string]string {
	out := map[string]string{}
	for _, c := range sb.Status.Conditions {
		out[c.Type] = c.Reason
	}
	return out
}

// patchStatus writes status through the status subresource, only when it changed.
func (r *SandboxReconciler) patchStatus(ctx context.Context, before, sb *sandboxv1.Sandbox) error {
	if equality.Semantic.DeepEqual(before.Status, sb.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, sb, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// reconcileDelete tears down by UID label, confirms nothing is left, then lets go.
func (r *SandboxReconciler) reconcileDelete(ctx context.Context, sb *sandboxv1.Sandbox) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(sb, Finalizer) {
		return ctrl.Result{}, nil
	}
	before := sb.DeepCopy()
	// Note: a Sandbox deleted because its owner left keeps saying so while it goes.
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1.ConditionReady); c == nil || c.Reason != sandboxv1.ReasonOwnerGone {
		setCondition(sb, sandboxv1.ConditionReady, "False", sandboxv1.ReasonDeleting, "tearing down the service containers")
	}
	if err := r.patchStatus(ctx, before, sb); err != nil {
		return ctrl.Result{}, err
	}

	removed, err := r.teardown(ctx, sb)
	if err != nil {
		logf.FromContext(ctx).Info("Teardown incomplete; retrying", "error", err.Error())
		return ctrl.Result{RequeueAfter: createRetry}, nil
	}
	// Note: the Secret is owned by the Sandbox, but we do not rely on the garbage
	// collector alone: credentials should not outlive their containers.
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: sb.Namespace, Name: secretName(sb)}, secret); err == nil &&
		metav1.IsControlledBy(secret, sb) {
		if err := r.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting Secret: %w", err)
		}
	}
	r.Recorder.Eventf(sb, nil, corev1.EventTypeNormal, "TornDown", "Teardown", "removed %d containers with their volumes", removed)
	logf.FromContext(ctx).Info("Sandbox torn down", "containers", removed)

	patch := client.MergeFrom(sb.DeepCopy())
	controllerutil.RemoveFinalizer(sb, Finalizer)
	if err := r.Patch(ctx, sb, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// teardown removes every container carrying the Sandbox's UID (stop, kill, remove with
// volumes) in parallel, and lists again to confirm they are gone.
func (r *SandboxReconciler) teardown(ctx context.Context, sb *sandboxv1.Sandbox) (int, error) {
	cs, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = r.Driver.Remove(ctx, c.ID, r.Options.StopTimeout) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	left, err := r.Driver.List(ctx, uidSelector(sb))
	if err != nil {
		return 0, err
	}
	if len(left) > 0 {
		return 0, fmt.Errorf("%d containers still present after removal", len(left))
	}
	return len(cs), nil
}

// SetupWithManager registers the reconciler, its Docker event watch and its pull
// notifications with the manager.
func (r *SandboxReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.Options.Validate(); err != nil {
		return err
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("sandbox-controller")
	}
	if r.MaxConcurrentReconciles == 0 {
		r.MaxConcurrentReconciles = 4
	}
	r.requeue = make(chan event.TypedGenericEvent[*sandboxv1.Sandbox], 1024)
	r.pulls = newPullTracker(r.Driver, sandboxMetrics, r.enqueue)
	if err := registerReadyCollector(mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.pulls.start(ctx)
		<-ctx.Done()
		return nil
	})); err != nil {
		return err
	}
	if err := r.setupDockerWatch(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&sandboxv1.Sandbox{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A credentials Secret deleted by hand is re-made at once (the manager caches
		// only Secrets carrying SecretLabel).
		Owns(&corev1.Secret{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(r.requeue, &handler.TypedEnqueueRequestForObject[*sandboxv1.Sandbox]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("sandbox").
		Complete(r)
}

// enqueue re-queues one Sandbox from outside the API server's watch (a finished
// pull, a Docker event).
func (r *SandboxReconciler) enqueue(key types.NamespacedName) {
	sb := &sandboxv1.Sandbox{}
	sb.Namespace, sb.Name = key.Namespace, key.Name
	r.requeue <- event.TypedGenericEvent[*sandboxv1.Sandbox]{Object: sb}
}

// ownerName is the owner container recorded on the service containers.
func (r *SandboxReconciler) ownerName(sb *sandboxv1.Sandbox) string {
	if sb.Spec.Owner != nil && sb.Spec.Owner.ContainerName != "" {
		return sb.Spec.Owner.ContainerName
	}
	return r.Options.ownerContainer(sb.Spec.AgentID)
}

// jitter spreads resyncs over ±10% so Sandboxes created together do not resync together.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
