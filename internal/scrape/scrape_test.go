package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

const page = `# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="200",path="/a b"} 3
requests_total{code="503",path="/a b"} 2
requests_total{code="200",path="/c"} 5
# TYPE lag_seconds gauge
lag_seconds 1.5
# TYPE loose untyped
loose{x="1"} 7
# TYPE latency_seconds histogram
latency_seconds_bucket{le="+Inf"} 4
latency_seconds_sum 2
latency_seconds_count 4
`

func TestSum(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(page))
	}))
	defer srv.Close()
	p, err := Get(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"requests_total", nil, 10},
		{"requests_total", []string{"code", "200"}, 8},
		{"requests_total", []string{"code", "200", "path", "/a b"}, 3},
		{"requests_total", []string{"code", "404"}, 0},
		{"requests_total", []string{"missing", ""}, 0},
		{"lag_seconds", nil, 1.5},
		{"loose", []string{"x", "1"}, 7},
		{"latency_seconds", nil, 0},
		{"absent_total", nil, 0},
	} {
		if got := p.Sum(c.name, c.match...); got != c.want {
			t.Errorf("Sum(%q, %q) = %v, want %v", c.name, c.match, got, c.want)
		}
	}
	if p["latency_seconds"] == nil || p["absent_total"] != nil {
		t.Errorf("families: %v", p)
	}
}

func TestGetRefusesErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.Write([]byte("requests_total{code=\"200\" 3\n"))
			return
		}
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if _, err := Get(context.Background(), srv.URL+"/metrics"); err == nil {
		t.Error("a 503 page parsed")
	}
	if _, err := Get(context.Background(), srv.URL+"/bad"); err == nil {
		t.Error("a malformed page parsed")
	}
}
