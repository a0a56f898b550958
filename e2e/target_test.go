package e2e

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// shards label every scraped series. Prometheus A's two remote-write queues
// split on it: queue rw1 (remote write 1.0, adapter 1) sends shards "a" and
// "both", queue rw2 (remote write 2.0, adapter 2) sends "b" and "both". So
// each protocol alone carries some series (a wrong decoder shows as a
// difference in its shard), and both adapters write the "both" series at the
// same moment, racing on every new label string.
var shards = []string{"a", "b", "both"}

// target is a deterministic scrape target: every value is a function of the
// number of scrapes served so far, so a run can be reasoned about, while the
// timestamps (chosen by Prometheus) keep runs apart.
type target struct {
	scrapes atomic.Int64
	srv     *http.Server
	addr    string
}

func startTarget(t *testing.T) *target {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tg := &target{addr: l.Addr().String()}
	tg.srv = &http.Server{Handler: http.HandlerFunc(tg.serve)}
	go tg.srv.Serve(l)
	t.Cleanup(func() { tg.srv.Close() })
	return tg
}

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	n := tg.scrapes.Add(1)
	var b bytes.Buffer
	writeExposition(&b, n)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// Label values that stress the string dictionary: non-ASCII, an emoji, and
// the three characters the text format escapes.
var rooms = []string{"kitchen", "Zürich-Büro", "東京", "emoji🔥"}

const escapedPath = "quote\"back\\slash\nnewline"

var durationBuckets = []float64{0.005, 0.01, 0.05, 0.1, 0.5, 1, 5}

// writeExposition renders scrape number n in the text exposition format.
func writeExposition(b *bytes.Buffer, n int64) {
	fmt.Fprintln(b, "# TYPE e2e_requests_total counter")
	for _, s := range shards {
		k := 0
		for _, method := range []string{"GET", "POST"} {
			for _, code := range []string{"200", "500"} {
				k++
				// Resets every 97 scrapes, so rate() crosses counter resets.
				v := float64((n%97)*int64(k)) + 0.25*float64(k)
				sample(b, "e2e_requests_total", v, "shard", s, "method", method, "code", code)
			}
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_temperature_celsius gauge")
	for _, s := range shards {
		for k, room := range rooms {
			// Full-precision floats: any rounding on the way shows.
			sample(b, "e2e_temperature_celsius", 20+5*math.Sin(float64(n)/7+float64(k)), "shard", s, "room", room)
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_request_duration_seconds histogram")
	for _, s := range shards {
		for h, handler := range []string{"/api", "/home"} {
			var cum int64
			for i, le := range durationBuckets {
				cum += n * int64((i+1)*(h+2)%5+1)
				sample(b, "e2e_request_duration_seconds_bucket", float64(cum), "shard", s, "handler", handler, "le", formatFloat(le))
			}
			cum += n
			sample(b, "e2e_request_duration_seconds_bucket", float64(cum), "shard", s, "handler", handler, "le", "+Inf")
			sample(b, "e2e_request_duration_seconds_sum", float64(n)*0.137*float64(h+1), "shard", s, "handler", handler)
			sample(b, "e2e_request_duration_seconds_count", float64(cum), "shard", s, "handler", handler)
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_flap gauge")
	if (n/8)%2 == 0 {
		// Present for 8 scrapes, absent for 8: Prometheus writes staleness
		// markers each time it goes.
		for _, s := range shards {
			sample(b, "e2e_flap", float64(n), "shard", s)
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_churn_info gauge")
	for _, s := range shards {
		// A new label value every 12 scrapes: new strings keep arriving.
		sample(b, "e2e_churn_info", 1, "shard", s, "generation", "g"+strconv.FormatInt(n/12, 10))
	}
	fmt.Fprintln(b, "# TYPE e2e_wide gauge")
	for _, s := range shards {
		for v := range 2 {
			kv := []string{"shard", s}
			for i := 1; i <= 20; i++ {
				kv = append(kv, fmt.Sprintf("l%02d", i), fmt.Sprintf("value-%d-%d", i, v*i))
			}
			sample(b, "e2e_wide", float64(n*int64(v+1)), kv...)
		}
	}
	for _, name := range []string{"e2e_shared_a", "e2e_shared_b"} {
		fmt.Fprintf(b, "# TYPE %s gauge\n", name)
		for _, s := range shards {
			for i, k := range []string{"x", "y"} {
				sample(b, name, float64(n)/float64(i+3), "shard", s, "k", k)
			}
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_special gauge")
	specials := []struct {
		kind string
		v    float64
	}{
		// A plain NaN must stay a value and not become a staleness marker.
		{"nan", math.NaN()},
		{"pinf", math.Inf(1)},
		{"ninf", math.Inf(-1)},
		// No -0: Prometheus's protobuf encoders drop a zero double, sign
		// and all, so -0 arrives as 0 through any remote-write receiver.
		{"subnormal", 3 * math.SmallestNonzeroFloat64},
		{"tiny", math.SmallestNonzeroFloat64},
		{"huge", math.MaxFloat64},
	}
	for _, s := range shards {
		for _, sp := range specials {
			sample(b, "e2e_special", sp.v, "shard", s, "kind", sp.kind)
		}
	}
	fmt.Fprintln(b, "# TYPE e2e_escape gauge")
	for _, s := range shards {
		sample(b, "e2e_escape", float64(n%5), "shard", s, "path", escapedPath)
	}
}

// sample writes one line: name{k="v",...} value.
func sample(b *bytes.Buffer, name string, v float64, kv ...string) {
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteString("} ")
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
