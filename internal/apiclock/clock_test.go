package apiclock

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// The skew is the API server's Date against the middle of the request, within
// the second the header is rounded to.
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
		if d := c.Skew() - offset; d > time.Second || d < -time.Second {
			t.Errorf("server %s ahead: skew %s, want within 1s of it", offset, c.Skew())
		}
		if d := c.Now().Sub(time.Now().Add(offset)); d > time.Second || d < -time.Second {
			t.Errorf("server %s ahead: Now is %s off the server's", offset, d)
		}
	}
}
