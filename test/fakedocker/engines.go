package fakedocker

import (
	"slices"
	"strings"

	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
	"github.com/roboco-sandbox/sandbox-controller/internal/host"
)

// EngineAnswers is an ExecHook that answers the engines' steps as a healthy
// service does, at once: in a container labelled with an engine
// (host.LabelEngine), an exec whose command is one of that engine's steps
// against one of the container's addresses (readiness probe, credential
// rotation, feature activation and verification) exits 0 and prints what the
// step expects. It checks no password. Feature verification lists nothing, so a
// Sandbox that asks for features is not served (the benchmark asks for none).
// Any other exec is left to the fake.
func EngineAnswers(call ExecCall) (ExecResult, bool) {
	e, ok := engine.Lookup(call.Labels[host.LabelEngine])
	if !ok {
		return ExecResult{}, false
	}
	var features []string
	if l := call.Labels[host.LabelFeatures]; l != "" {
		features = strings.Split(l, ",")
	}
	for _, addr := range call.Addresses {
		for _, step := range engineSteps(e, addr, features) {
			if len(step.Argv) == 0 || !slices.Equal(step.Argv, call.Cmd) {
				continue
			}
			res := ExecResult{}
			if step.Expect != "" {
				res.Stdout = step.Expect + "\n"
			}
			return res, true
		}
	}
	return ExecResult{}, false
}

// engineSteps are the commands e runs in its container at addr. The password
// travels in the steps' environment, never in their argv, so any will do here.
func engineSteps(e engine.Engine, addr string, features []string) []engine.Step {
	steps := []engine.Step{e.Probe("", addr), e.Rotate(addr)}
	verify, _ := e.VerifyFeatures("", addr)
	steps = append(steps, verify)
	activate, _ := e.ActivateFeatures("", addr, features)
	return append(steps, activate...)
}
