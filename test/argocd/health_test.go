// Package argocd tests the Argo CD health check shipped in config/argocd with
// gopher-lua, the interpreter Argo CD runs health checks in.
package argocd

import (
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/testenv"
)

func TestSandboxHealth(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "argocd", "sandbox.roboco.io", "Sandbox", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ fixture, status, message string }{
		{"new.yaml", "Progressing", "Waiting for the controller to observe generation 1"},
		{"provisioning.yaml", "Progressing", "postgres: pulling postgres:16-alpine (3s)"},
		{"ready.yaml", "Healthy", "postgres ready; credentials in Secret be-dev-1-sandbox"},
		{"stalled.yaml", "Degraded", "InvalidSpec: postgres: memory 64Gi is above the manager's maximum; the most allowed is 4Gi"},
		{"retrying.yaml", "Degraded", "Failed: postgres: manifest for postgres:16-alpine not found: manifest unknown; retrying in 20s"},
		{"docker-unavailable.yaml", "Degraded", "DockerUnavailable: redis: docker unavailable: connection refused"},
		{"spec-changed.yaml", "Progressing", "Waiting for the controller to observe generation 2"},
		{"deleting.yaml", "Progressing", "Being deleted: its containers and Secret are torn down"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			obj := fixture(t, tc.fixture)
			status, message := health(t, string(script), obj)
			if status != tc.status || message != tc.message {
				t.Errorf("health %s %q, want %s %q", status, message, tc.status, tc.message)
			}
		})
	}
}

// fixture reads a testdata Sandbox, strictly as the API's type (so a fixture
// cannot drift from the schema), and returns it as Argo CD hands it to Lua.
func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var sb sandboxv1.Sandbox
	if err := yaml.UnmarshalStrict(raw, &sb); err != nil {
		t.Fatalf("%s is not a Sandbox: %v", name, err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// health runs script with obj as the global obj, as Argo CD does, and returns
// the status and message of the table it returns.
func health(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("the health check failed: %v", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returned %s, not a table", L.Get(-1).Type())
	}
	return hs.RawGetString("status").String(), hs.RawGetString("message").String()
}

// toLua converts decoded JSON to Lua values: objects to tables, arrays to
// 1-based tables, numbers to numbers.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}
