package testenv

import (
	"fmt"
	"testing"
)

// recorder is a T that records a failure instead of ending the test, so a test
// can check that a helper fails when it should.
type recorder struct {
	*testing.T
	failure string
}

func (r *recorder) Fatalf(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }
