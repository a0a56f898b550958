package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("Healthy.\n")) })
	down := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Storage not ready", http.StatusServiceUnavailable)
	})

	srv := httptest.NewServer(ok)
	defer srv.Close()
	if err := check(srv.URL, time.Second, false); err != nil {
		t.Errorf("healthy server: %v", err)
	}

	bad := httptest.NewServer(down)
	defer bad.Close()
	if err := check(bad.URL, time.Second, false); err == nil {
		t.Error("a 503 passed the check")
	}

	tls := httptest.NewTLSServer(ok)
	defer tls.Close()
	if err := check(tls.URL, time.Second, false); err == nil {
		t.Error("an unverifiable certificate passed without -insecure-skip-verify")
	}
	if err := check(tls.URL, time.Second, true); err != nil {
		t.Errorf("self-signed server with -insecure-skip-verify: %v", err)
	}

	srv.Close()
	if err := check(srv.URL, time.Second, false); err == nil {
		t.Error("a closed server passed the check")
	}
}
