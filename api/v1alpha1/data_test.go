package v1alpha1_test

import (
	"testing"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
)

func TestDataRequestSame(t *testing.T) {
	req := func(id string, a sandboxv1.DataAction, services ...sandboxv1.Engine) sandboxv1.DataRequest {
		return sandboxv1.DataRequest{ID: id, Action: a, Services: services}
	}
	ckpt := req("d1", sandboxv1.DataCheckpoint, "redis", "postgres")
	for _, tc := range []struct {
		name  string
		other sandboxv1.DataRequest
		same  bool
	}{
		{"itself", ckpt, true},
		{"its services in another order", req("d1", sandboxv1.DataCheckpoint, "postgres", "redis"), true},
		{"its id with another action", req("d1", sandboxv1.DataRestore, "redis", "postgres"), false},
		{"its id and action for every service", req("d1", sandboxv1.DataCheckpoint), false},
		{"its id and action for fewer services", req("d1", sandboxv1.DataCheckpoint, "redis"), false},
		{"another id", req("d2", sandboxv1.DataCheckpoint, "redis", "postgres"), false},
	} {
		if got := ckpt.Same(tc.other); got != tc.same {
			t.Errorf("%s: Same = %v, want %v (keys %q, %q)", tc.name, got, tc.same, ckpt.Key(), tc.other.Key())
		}
	}
	if every := req("d1", sandboxv1.DataReset); !every.Same(sandboxv1.DataRequest{ID: "d1", Action: sandboxv1.DataReset, Services: []sandboxv1.Engine{}}) {
		t.Errorf("no services and an empty list both mean every service")
	}
	named := req("d1", sandboxv1.DataRestore)
	if named.Key() != "d1:Restore:" {
		t.Errorf("a request without a name keyed %q: a release before names keyed it d1:Restore:", named.Key())
	}
	latest := named
	latest.Name = sandboxv1.DefaultCheckpoint
	other := named
	other.Name = "before-migration"
	if !named.Same(latest) || named.Same(other) {
		t.Errorf("keys %q, %q, %q: no name and latest are one request, another name another", named.Key(), latest.Key(), other.Key())
	}
}
