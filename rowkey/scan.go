package rowkey

import "github.com/prom-hbase/prom-hbase/uid"

// Range is a key range of a scan: Start inclusive, Stop exclusive; a nil Stop
// means the end of the table.
type Range struct{ Start, Stop []byte }

// AppendScanRanges appends the key ranges that hold the rows of metric for
// the base hours startHour through endHour (inclusive; seconds, multiples of
// HourSeconds, as BaseHour gives them): one range per salt bucket, in bucket
// order, so the ranges are ascending and disjoint. Nothing is appended when
// startHour > endHour.
func (l Layout) AppendScanRanges(dst []Range, metric uint64, startHour, endHour uint32) []Range {
	if startHour > endHour {
		return dst
	}
	buckets := 1
	if l.SaltWidth() == 1 {
		buckets = l.SaltBuckets
	}
	n := l.SaltWidth() + l.MetricWidth + 4
	// One backing array for all keys: a query asks for many ranges at once.
	buf := make([]byte, 0, 2*n*buckets)
	for b := range buckets {
		start := len(buf)
		buf = l.appendPrefix(buf, byte(b), metric, startHour)
		r := Range{Start: buf[start:len(buf):len(buf)]}
		start = len(buf)
		buf = l.appendPrefix(buf, byte(b), metric, endHour)
		// Every row of endHour extends its prefix, so the first key past them
		// all is the prefix plus one (nil: past the end of the table).
		if incrementBytes(buf[start:]) {
			r.Stop = buf[start:len(buf):len(buf)]
		}
		dst = append(dst, r)
	}
	return dst
}

// BucketHourRange is the key range of the rows of metric in one salt bucket
// and base hour: Start is their common prefix (salt, metric UID, hour), and
// Stop the first key past them (nil: past the end of the table). It is one
// of the ranges AppendScanRanges gives for that hour.
func (l Layout) BucketHourRange(salt byte, metric uint64, hour uint32) Range {
	start := l.appendPrefix(nil, salt, metric, hour)
	stop := append([]byte(nil), start...)
	r := Range{Start: start}
	if incrementBytes(stop) {
		r.Stop = stop
	}
	return r
}

func (l Layout) appendPrefix(dst []byte, salt byte, metric uint64, hour uint32) []byte {
	if l.SaltWidth() == 1 {
		dst = append(dst, salt)
	}
	dst = uid.Append(dst, metric, l.MetricWidth)
	return append(dst, byte(hour>>24), byte(hour>>16), byte(hour>>8), byte(hour))
}

// incrementBytes adds one to b read as a big-endian number, in place. It
// reports false when b is all 0xff (no key of b's length follows it).
func incrementBytes(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}
