package controllertest

import "encoding/json"

// ToJSON is v as JSON, for a spec that sets a raw field.
func ToJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
