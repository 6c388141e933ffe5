package apiclock

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// The skew is the API server's Date against the request, within the second the
// header is rounded to, and never puts the clock ahead of the server's; clocks
// that agree get none.
func TestMeasureReadsTheServersDate(t *testing.T) {
	for _, offset := range []time.Duration{0, time.Hour, -90 * time.Minute} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
			_, _ = w.Write([]byte(`{}`))
		}))
		c := New(nil)
		if err := c.Measure(context.Background(), &rest.Config{Host: srv.URL}); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if d := c.Skew() - offset; d > 0 || d < -2*time.Second {
			t.Errorf("server %s ahead: skew %s, want at most 2s under it (a whole second and the round trip)", offset, c.Skew())
		}
		if offset == 0 && c.Skew() != 0 {
			t.Errorf("the same clock: skew %s, want none", c.Skew())
		}
		if d := c.Now().Sub(time.Now().Add(offset)); d > time.Second || d < -time.Second {
			t.Errorf("server %s ahead: Now is %s off the server's", offset, d)
		}
	}
}
