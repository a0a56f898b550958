package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/importer"
)

// TestSummaryTime reads the samples and the loop's seconds from the summary
// the import command prints (importer.Summary.Print), with the lines around
// it.
func TestSummaryTime(t *testing.T) {
	var out bytes.Buffer
	out.WriteString("some log line in 3.0s: 5 samples/s\n")
	s := &importer.Summary{Units: 4, Imported: 4, Series: 40, Samples: 1920, Elapsed: 12345 * time.Millisecond}
	s.Print(&out)
	out.WriteString("written: 1920 samples in chunk cells\n")
	m := summaryTime.FindSubmatch(out.Bytes())
	if m == nil || string(m[1]) != "1920" || string(m[2]) != "12.3" {
		t.Fatalf("samples and seconds %q from\n%s", m, out.String())
	}
}
