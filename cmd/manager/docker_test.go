package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dd "github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver"
	"github.com/roboco-sandbox/sandbox-controller/internal/dockerdriver/fake"
)

// TestReadyzFollowsDocker: /readyz fails while Docker does not answer, including
// when it hangs, and recovers when it answers again.
func TestReadyzFollowsDocker(t *testing.T) {
	driver := fake.New()
	check := dockerReadyz(driver)
	req := httptest.NewRequest("GET", "/readyz", nil)
	if err := check(req); err != nil {
		t.Fatalf("ready while Docker answers: %v", err)
	}
	clear := driver.Inject(fake.Fault{Verb: fake.VerbPing, Err: dd.ErrUnavailable})
	if err := check(req); err == nil || !strings.Contains(err.Error(), "docker does not answer") {
		t.Errorf("Docker down: err = %v", err)
	}
	clear()
	clear = driver.Inject(fake.Fault{Verb: fake.VerbPing, Delay: time.Hour})
	t0 := time.Now()
	if err := check(req); err == nil {
		t.Error("Docker hanging: ready")
	}
	if d := time.Since(t0); d > pingTimeout+time.Second {
		t.Errorf("a hanging Docker held /readyz for %s", d)
	}
	clear()
	// A wedged daemon answers pings while its container calls hang.
	clear = driver.Inject(fake.Fault{Verb: fake.VerbList, Delay: time.Hour})
	if err := check(req); err == nil || !strings.Contains(err.Error(), "not container calls") {
		t.Errorf("Docker answering pings only: err = %v", err)
	}
	clear()
	if err := check(req); err != nil {
		t.Errorf("Docker back: %v", err)
	}
}

// TestStartupSaysWhatToCheck: an unreachable Docker fails start-up within the
// timeout, with the address and what to check.
func TestStartupSaysWhatToCheck(t *testing.T) {
	driver := fake.New()
	driver.Inject(fake.Fault{Verb: fake.VerbPing, Err: dd.ErrUnavailable})
	t0 := time.Now()
	_, err := waitForDocker(context.Background(), driver, "unix:///var/run/docker.sock", time.Second)
	if err == nil {
		t.Fatal("start-up accepted a Docker that does not answer")
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("gave up after %s, want about the 1s timeout", d)
	}
	for _, want := range []string{"unix:///var/run/docker.sock", "did not answer within 1s", "daemon runs", "read and write access", "DOCKER_HOST", "--docker-startup-timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}

	// A daemon that comes up during the wait is taken.
	driver = fake.New()
	driver.Inject(fake.Fault{Verb: fake.VerbPing, Err: dd.ErrUnavailable, Times: 2})
	if _, err := waitForDocker(context.Background(), driver, "unix:///var/run/docker.sock", 10*time.Second); err != nil {
		t.Errorf("a daemon answering on the third ping: %v", err)
	}
}
