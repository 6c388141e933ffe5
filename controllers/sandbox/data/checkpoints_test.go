package data

import (
	"slices"
	"testing"
	"time"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

func held(d *sandboxv1.ServiceData) []string {
	var out []string
	for _, c := range d.Checkpoints {
		out = append(out, c.Name+"@"+c.ContainerID)
	}
	return out
}

// What a service holds follows its container: a listing replaces it (what
// it no longer names is lost, but the one deleted), and a checkpoint of
// another container is lost.
func TestCheckpointsFollowTheContainer(t *testing.T) {
	d := &sandboxv1.ServiceData{}
	at := time.Unix(1700000000, 0)
	lost := Listed(d, []engine.Checkpoint{{Name: "a", Taken: at}, {Name: "b", Taken: at}, {Name: "c", Taken: at}}, "c1", "")
	if len(lost) != 0 || !slices.Equal(held(d), []string{"a@c1", "b@c1", "c@c1"}) {
		t.Fatalf("first listing: %v, lost %v", held(d), lost)
	}
	lost = Listed(d, []engine.Checkpoint{{Name: "c", Taken: at}}, "c1", "a")
	if !slices.Equal(lost, []string{"b"}) || !slices.Equal(held(d), []string{"c@c1"}) {
		t.Errorf("after deleting a, b dropped: %v, lost %v; want c, b lost", held(d), lost)
	}
	if lost := Held(d, "c1"); len(lost) != 0 || len(d.Checkpoints) != 1 {
		t.Errorf("the same container: lost %v", lost)
	}
	if lost := Held(d, "c2"); !slices.Equal(lost, []string{"c"}) || d.Checkpoints != nil {
		t.Errorf("another container: %v, lost %v; want none held, c lost", held(d), lost)
	}
}

// status.checkpoints is by name: the services holding one, the first
// taken, the sizes together.
func TestSummarizeCheckpoints(t *testing.T) {
	t1, t2 := time.Unix(1700000000, 0), time.Unix(1700000100, 0)
	sb := &sandboxv1.Sandbox{}
	for _, s := range []struct {
		e    sandboxv1.Engine
		list []engine.Checkpoint
	}{
		{"redis", []engine.Checkpoint{{Name: "b", Taken: t2, Bytes: 5}, {Name: "a", Taken: t2, Bytes: 1}}},
		{"postgres", []engine.Checkpoint{{Name: "a", Taken: t1, Bytes: 2}}},
		{"mongo", nil},
	} {
		st := sandboxv1.ServiceStatus{Engine: s.e, Data: &sandboxv1.ServiceData{}}
		Listed(st.Data, s.list, "c-"+string(s.e), "")
		sb.Status.Services = append(sb.Status.Services, st)
	}
	SummarizeCheckpoints(sb)
	got := sb.Status.Checkpoints
	if len(got) != 2 || got[0].Name != "a" || !slices.Equal(got[0].Services, []sandboxv1.Engine{"postgres", "redis"}) ||
		got[0].SizeBytes != 3 || !got[0].Time.Time.Equal(t1) || got[1].Name != "b" || got[1].SizeBytes != 5 {
		t.Errorf("status.checkpoints = %+v", got)
	}
}
