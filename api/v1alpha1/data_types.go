package v1alpha1

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataAction is what a DataRequest does to the services' data.
// +kubebuilder:validation:Enum=Reset;Checkpoint;Restore;DeleteCheckpoint
type DataAction string

const (
	// DataReset returns each service to its initial state: as its init scripts
	// left it, or empty.
	DataReset DataAction = "Reset"
	// DataCheckpoint records each service's current data under the request's
	// name, replacing a checkpoint of that name. It lives in the service's
	// container (on tmpfs, counted against its memory limit) and goes with it.
	DataCheckpoint DataAction = "Checkpoint"
	// DataRestore returns each service to its checkpoint of the request's name.
	DataRestore DataAction = "Restore"
	// DataDeleteCheckpoint removes each service's checkpoint of the request's
	// name, and the memory it took.
	DataDeleteCheckpoint DataAction = "DeleteCheckpoint"
)

// DefaultCheckpoint is the name of a checkpoint a request names none for:
// the one checkpoint a release before named checkpoints kept.
const DefaultCheckpoint = "latest"

// MaxCheckpointsCeiling is the most checkpoints a service may be allowed to
// keep (spec.services[].maxCheckpoints, the manager's --max-checkpoints).
const MaxCheckpointsCeiling = 100

// DataRequest asks for one operation on the services' data. The controller does
// it once on each service it names; writing a new id asks again, and so does
// another action, services or checkpoint name under the same id (it is
// another request). The credentials, containers, hosts and ports stay as
// they are.
// +kubebuilder:validation:XValidation:rule="!has(self.name) || self.action != 'Reset'",message="data.name names a checkpoint: it goes with Checkpoint, Restore or DeleteCheckpoint, not Reset"
type DataRequest struct {
	// id names this request; write a new one (a counter, a timestamp) to ask
	// again. A request replaced before it finished is not finished.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="data.id must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit (e.g. reset-7)"
	ID string `json:"id"`
	// action is Reset, Checkpoint, Restore or DeleteCheckpoint.
	// +required
	Action DataAction `json:"action"`
	// name is the checkpoint a Checkpoint keeps, a Restore returns to and a
	// DeleteCheckpoint removes (default: latest).
	// +optional
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="data.name must be lowercase letters, digits and '-', starting and ending with a letter or digit, at most 40 (e.g. before-migration)"
	Name string `json:"name,omitempty"`
	// services limits the request to these engines of spec.services (default: every service).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Services []Engine `json:"services,omitempty"`
}

// Key is the request's identity in one string: its id, action, services
// (as a set) and checkpoint name. Two requests are the same request when
// their keys are equal: a service has done spec.data only when it recorded
// this very request, and its container keeps the key of the last one it did.
// The default name adds nothing, so a request a release before names wrote
// keeps its key (its container does not run it again after an upgrade).
func (r DataRequest) Key() string {
	services := make([]string, 0, len(r.Services))
	for _, e := range r.Services {
		services = append(services, string(e))
	}
	slices.Sort(services)
	key := r.ID + ":" + string(r.Action) + ":" + strings.Join(slices.Compact(services), ",")
	if name := r.Checkpoint(); name != DefaultCheckpoint {
		key += ":" + name
	}
	return key
}

// Checkpoint is the checkpoint the request names: its name, else latest.
func (r DataRequest) Checkpoint() string {
	if r.Name == "" {
		return DefaultCheckpoint
	}
	return r.Name
}

// Same says whether r and o are the same request (equal keys).
func (r DataRequest) Same(o DataRequest) bool { return r.Key() == o.Key() }

// DataPhase is where a DataRequest stands.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed
type DataPhase string

const (
	// DataRunning: some service named has not done it yet (the message says which and why).
	DataRunning DataPhase = "Running"
	// DataSucceeded: every service named did it.
	DataSucceeded DataPhase = "Succeeded"
	// DataFailed: every service named is done, and one or more failed (the
	// message has the engine's words). A failed service keeps serving as it was.
	DataFailed DataPhase = "Failed"
)

// DataRequestStatus is what became of spec.data.
type DataRequestStatus struct {
	// id, action, services and name are spec.data's: the request the phase is for.
	ID     string     `json:"id"`
	Action DataAction `json:"action"`
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Services []Engine `json:"services,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// observedGeneration is the Sandbox's generation this was last judged at.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is Running, Succeeded or Failed.
	Phase DataPhase `json:"phase"`
	// message says what is awaited, or what failed, in the engine's words.
	// +optional
	Message string `json:"message,omitempty"`
	// completionTime is when the last service named finished it.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// Request is the request status.data is for.
func (s *DataRequestStatus) Request() DataRequest {
	return DataRequest{ID: s.ID, Action: s.Action, Services: s.Services, Name: s.Name}
}

// ServiceData is what was done to one service's data.
type ServiceData struct {
	// requestID, requestAction and requestServices are the last spec.data
	// request this service finished, done or failed: it has finished
	// spec.data when that is the same request (id, action and services), not
	// only the same id. requestAction is absent when a release before it
	// wrote requestID.
	// +optional
	RequestID string `json:"requestID,omitempty"`
	// +optional
	RequestAction DataAction `json:"requestAction,omitempty"`
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	RequestServices []Engine `json:"requestServices,omitempty"`
	// +optional
	RequestName string `json:"requestName,omitempty"`
	// error is why that request failed on this service, in the engine's words.
	// +optional
	Error string `json:"error,omitempty"`
	// running says what of spec.data's request runs in the container while it
	// runs, and for how long ("restore running 3s").
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Running string `json:"running,omitempty"`
	// lastReset, lastCheckpoint and lastRestore are the last of each done.
	// +optional
	LastReset *DataOperation `json:"lastReset,omitempty"`
	// +optional
	LastCheckpoint *DataOperation `json:"lastCheckpoint,omitempty"`
	// +optional
	LastRestore *DataOperation `json:"lastRestore,omitempty"`
	// checkpoints are those the container held when it was last read (by a
	// Checkpoint or DeleteCheckpoint, or a listing), by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Checkpoints []ServiceCheckpoint `json:"checkpoints,omitempty"`
}

// Request is the request the service last finished; ok is false when none
// is recorded whole (none, or a release before requestAction wrote it).
func (d *ServiceData) Request() (r DataRequest, ok bool) {
	return DataRequest{ID: d.RequestID, Action: d.RequestAction, Services: d.RequestServices, Name: d.RequestName}, d.RequestAction != ""
}

// Record makes r the request the service last finished.
func (d *ServiceData) Record(r DataRequest) {
	d.RequestID, d.RequestAction, d.RequestServices, d.RequestName = r.ID, r.Action, slices.Clone(r.Services), r.Name
}

// DataOperation is one operation done on a service's data.
type DataOperation struct {
	// id is the request's.
	ID string `json:"id"`
	// generation is the Sandbox's generation it was done at.
	Generation int64 `json:"generation"`
	// time is when it was done.
	Time metav1.Time `json:"time"`
	// containerID is the container it was done in: a checkpoint lives there,
	// and goes with it.
	ContainerID string `json:"containerID"`
	// durationMilliseconds is how long the engine took.
	// +optional
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
}
