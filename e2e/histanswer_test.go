package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Histogram samples of an answer are points too: their value is the JSON
// object Prometheus printed ({"count":..,"sum":..,"buckets":[..]}, every
// number a string in its shortest round-trip form, empty buckets left out),
// compacted. Equal histograms print the same bytes, so exact comparison
// stays string equality; the tolerance compares field by field.

// appendHistogramPoints adds the histogram samples of an answer's series
// (the "histogram" of an instant vector, the "histograms" of a range) to
// its float points, in time order: a series that changes from floats to
// histograms has both.
func appendHistogramPoints(pts []point, one []json.RawMessage, many [][]json.RawMessage) ([]point, error) {
	if one != nil {
		many = append(many, one)
	}
	if len(many) == 0 {
		return pts, nil
	}
	for _, v := range many {
		if len(v) != 2 {
			return nil, fmt.Errorf("bad histogram sample %s", v)
		}
		var ts float64
		if err := json.Unmarshal(v[0], &ts); err != nil {
			return nil, fmt.Errorf("bad histogram timestamp %s: %w", v[0], err)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v[1]); err != nil {
			return nil, fmt.Errorf("bad histogram %s: %w", v[1], err)
		}
		if !isHistogramValue(b.String()) {
			return nil, fmt.Errorf("bad histogram %s", v[1])
		}
		pts = append(pts, point{t: int64(math.Round(ts * 1000)), v: b.String()})
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	return pts, nil
}

func isHistogramValue(v string) bool { return len(v) > 0 && v[0] == '{' }

// apiHistogram is a histogram as the query API prints it. Each bucket is
// [boundary rule, lower, upper, count].
type apiHistogram struct {
	Count   string  `json:"count"`
	Sum     string  `json:"sum"`
	Buckets [][]any `json:"buckets"`
}

// sameHistogram says whether a and b are equal within the tolerance of
// sameValue: count, sum and every bucket's count within 1e-12 relative,
// the same buckets with the same boundaries exactly (they follow from the
// schema, and no arithmetic moves them).
func sameHistogram(a, b string) bool {
	if !isHistogramValue(a) || !isHistogramValue(b) {
		return false
	}
	var ha, hb apiHistogram
	if json.Unmarshal([]byte(a), &ha) != nil || json.Unmarshal([]byte(b), &hb) != nil {
		return false
	}
	if !closeFloats(ha.Count, hb.Count) || !closeFloats(ha.Sum, hb.Sum) || len(ha.Buckets) != len(hb.Buckets) {
		return false
	}
	for i, ba := range ha.Buckets {
		bb := hb.Buckets[i]
		if len(ba) != 4 || len(bb) != 4 {
			return false
		}
		if fmt.Sprint(ba[:3]) != fmt.Sprint(bb[:3]) {
			return false
		}
		ca, okA := ba[3].(string)
		cb, okB := bb[3].(string)
		if !okA || !okB || !closeFloats(ca, cb) {
			return false
		}
	}
	return true
}

// closeFloats compares two printed floats with sameValue's tolerance;
// NaN equals only NaN here (a histogram's sum is NaN when an observation
// was), and infinities only themselves.
func closeFloats(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	if errA != nil || errB != nil || math.IsNaN(fa) || math.IsNaN(fb) || math.IsInf(fa, 0) || math.IsInf(fb, 0) {
		return false
	}
	return math.Abs(fa-fb) <= 1e-12*math.Max(math.Abs(fa), math.Abs(fb))
}
