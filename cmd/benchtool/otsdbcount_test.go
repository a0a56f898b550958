package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jsonCount is what countOpenTSDB did before: the answer decoded whole.
func jsonCount(b []byte) (int64, error) {
	var results []struct {
		DPs map[string]json.RawMessage `json:"dps"`
	}
	if err := json.Unmarshal(b, &results); err != nil {
		return 0, err
	}
	var n int64
	for _, s := range results {
		n += int64(len(s.DPs))
	}
	return n, nil
}

// otsdbAnswer is an /api/query answer of series x points, its tags
// including one named dps and values with a "dps": inside.
func otsdbAnswer(series, points int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for s := range series {
		if s > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"metric":"requests_total","tags":{"dps":"a\"dps\":{x","instance":"host-%d"},"aggregateTags":[],"dps":{`, s)
		for p := range points {
			if p > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%d":%d.25`, 1750000000+15*p, p)
		}
		b.WriteString("}}")
	}
	b.WriteString("]")
	return []byte(b.String())
}

func TestCountOpenTSDB(t *testing.T) {
	for _, c := range []struct{ series, points int }{{0, 0}, {1, 0}, {1, 1}, {3, 360}, {25, 360}} {
		a := otsdbAnswer(c.series, c.points)
		want, err := jsonCount(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := countOpenTSDB(bytes.NewReader(a))
		if err != nil || got != want || want != int64(c.series*c.points) {
			t.Errorf("%d series x %d points: counted %d (%v), decoded %d", c.series, c.points, got, err, want)
		}
	}
	if _, err := countOpenTSDB(strings.NewReader(`[{"dps":{"1":2,`)); err == nil {
		t.Error("a cut answer counted without an error")
	}
}

// BenchmarkCountOpenTSDB: an answer of one metric of make bench's read (25
// series x 360 points), counted by scanning and by decoding.
func BenchmarkCountOpenTSDB(b *testing.B) {
	a := otsdbAnswer(25, 360)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(a)))
		for b.Loop() {
			if _, err := countOpenTSDB(bytes.NewReader(a)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/9000, "ns/point")
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(a)))
		for b.Loop() {
			if _, err := jsonCount(a); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/9000, "ns/point")
	})
}
