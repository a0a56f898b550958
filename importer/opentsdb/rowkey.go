package opentsdb

import (
	"encoding/binary"
	"fmt"
)

// hour is OpenTSDB's row span (Const.MAX_TIMESPAN), in seconds.
const hour = 3600

// keyLayout is the shape of a data row key: [salt][metric][u32 base
// time][tagk tagv]..., each UID of its configured width.
type keyLayout struct {
	salt, metric, tagk, tagv int
	buckets                  int // salt buckets; 1 when unsalted
}

// tagsAt is where the tags start in a row key.
func (l keyLayout) tagsAt() int { return l.salt + l.metric + 4 }

// parse splits a row key into its base time and its tag pairs (tagk UID,
// tagv UID, ...). The metric is the caller's: it scanned for it.
func (l keyLayout) parse(key []byte) (base int64, tags []byte, err error) {
	at := l.tagsAt()
	pair := l.tagk + l.tagv
	if len(key) < at || (len(key)-at)%pair != 0 {
		return 0, nil, fmt.Errorf("row key %x: %d bytes, not %d + n*%d", key, len(key), at, pair)
	}
	return int64(binary.BigEndian.Uint32(key[at-4:])), key[at:], nil
}

// appendSalt appends bucket's salt bytes: the bucket number, big-endian,
// on the salt width (RowKey.getSaltBytes).
func (l keyLayout) appendSalt(dst []byte, bucket int) []byte {
	for i := l.salt - 1; i >= 0; i-- {
		dst = append(dst, byte(bucket>>(8*i)))
	}
	return dst
}

// key appends the start of the rows of metric at base time base in bucket.
func (l keyLayout) key(dst []byte, bucket int, metric []byte, base int64) []byte {
	dst = l.appendSalt(dst, bucket)
	dst = append(dst, metric...)
	return binary.BigEndian.AppendUint32(dst, uint32(base))
}

// metricEnd appends the first key after every row of metric in bucket.
func (l keyLayout) metricEnd(dst []byte, bucket int, metric []byte) []byte {
	start := len(dst)
	dst = l.appendSalt(dst, bucket)
	dst = append(dst, metric...)
	for i := len(dst) - 1; i >= start; i-- {
		if dst[i] != 0xFF {
			dst[i]++
			return dst[:i+1]
		}
	}
	// Every byte 0xFF: the rows run to the end of the table.
	return dst[:start]
}

// maxBase is the last hour a u32 base time can hold.
const maxBase = (1<<32 - 1) / hour * hour

// rowRange is the key range of metric's rows from base time first to last
// (seconds, hour-aligned, inclusive) in bucket.
func (l keyLayout) rowRange(bucket int, metric []byte, first, last int64) (start, stop []byte) {
	start = l.key(nil, bucket, metric, first)
	if last >= maxBase {
		return start, l.metricEnd(nil, bucket, metric)
	}
	return start, l.key(nil, bucket, metric, last+1)
}
