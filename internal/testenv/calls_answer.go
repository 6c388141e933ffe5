package testenv

import (
	"net/http"
	"strconv"
)

// answerWriter calls answered just before the client can hold the whole answer,
// so that a request the client was answered is already in the trace: before the
// last byte of a body of known length, before the headers of an answer without
// a body. Other answers (chunked, streams, upgrades) end only after the proxy
// returns, where the handler calls answered itself.
type answerWriter struct {
	http.ResponseWriter
	head     bool
	left     int64 // body bytes still to pass on; -1 when unknown
	answered func()
}

func (w *answerWriter) WriteHeader(code int) {
	if code >= http.StatusOK { // 1xx answers are not the answer
		if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil {
			w.left = n
		}
		if w.head || code == http.StatusNoContent || code == http.StatusNotModified || w.left == 0 {
			w.answered()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	if w.left > 0 && int64(len(b)) >= w.left {
		w.answered()
	}
	n, err := w.ResponseWriter.Write(b)
	if w.left > 0 {
		w.left -= int64(n)
	}
	return n, err
}

// Unwrap lets the proxy flush and hijack (upgrades) the server's own writer.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
