package main

import (
	"strings"
	"testing"
)

func TestIngestMedianAndRange(t *testing.T) {
	in := `step=ingest rep=1 target=adapter samples_per_request=200 samples_per_sec=60000
step=ingest rep=1 target=opentsdb samples_per_request=200 samples_per_sec=50000
step=ingest rep=2 target=opentsdb samples_per_request=200 samples_per_sec=40000
step=ingest rep=2 target=adapter samples_per_request=200 samples_per_sec=80000
step=ingest rep=3 target=adapter samples_per_request=200 samples_per_sec=70000
step=ingest rep=3 target=opentsdb samples_per_request=200 samples_per_sec=70000
step=ingest rep=1 target=adapter samples_per_request=2000 samples_per_sec=1
`
	rs, err := parseRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	a := rs.findAll("step", "ingest", "target", "adapter", "samples_per_request", "200")
	o := rs.findAll("step", "ingest", "target", "opentsdb", "samples_per_request", "200")
	if len(a) != 3 || len(o) != 3 {
		t.Fatalf("found %d and %d runs, want 3 each", len(a), len(o))
	}
	if m := median(a, "samples_per_sec"); m != 70000 {
		t.Errorf("median %v, want 70000", m)
	}
	if m := median(a[:2], "samples_per_sec"); m != 70000 {
		t.Errorf("median of two %v, want their mean 70000", m)
	}
	// Runs pair up by rep, whichever went first: 1.2, 2.0 and 1.0.
	if got := ratioRange(a, o, "samples_per_sec"); got != " (1.00-2.00)" {
		t.Errorf("ratioRange %q, want %q", got, " (1.00-2.00)")
	}
	if got := ratioRange(a[:1], o[:1], "samples_per_sec"); got != "" {
		t.Errorf("ratioRange of one run %q, want empty", got)
	}
	if f := rs.find("step", "ingest", "samples_per_request", "2000"); f.num("samples_per_sec") != 1 {
		t.Errorf("find: %v", f)
	}
}
