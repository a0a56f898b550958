package rowkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/prom-hbase/prom-hbase/uid"
	"math/bits"
	"slices"
)

// ErrMalformedKey marks a row key (or series ID) that does not fit the layout.
var ErrMalformedKey = errors.New("malformed row key")

// AppendSeriesID appends the series ID of a series: its metric UID then its
// tag pairs, without salt and hour. The series ID is what identifies a series
// across hours; callers compare series IDs for equality (and use them as map
// keys), never for order.
//
// tags must be sorted by K with distinct keys and every UID must fit its width
// (see CheckSeries); wider values are truncated to their low bytes.
func (l Layout) AppendSeriesID(dst []byte, metric uint64, tags []TagPair) []byte {
	n := len(dst)
	size := l.SeriesIDLen(len(tags))
	dst = slices.Grow(dst, size)[:n+size]
	b := dst[n:]
	uid.Put(b[:l.MetricWidth], metric)
	b = b[l.MetricWidth:]
	kw, pw := l.TagKWidth, l.PairWidth()
	for _, t := range tags {
		uid.Put(b[:kw], t.K)
		uid.Put(b[kw:pw], t.V)
		b = b[pw:]
	}
	return dst
}

// SeriesIDLen is the length of the series ID of a series with n tags.
func (l Layout) SeriesIDLen(n int) int { return l.MetricWidth + n*l.PairWidth() }

// Salt is the bucket of a series: a hash of its series ID modulo the bucket
// count, 0 when the layout is unsalted. It never depends on the hour, so all
// the rows of a series stay in one bucket and a query scans each bucket once.
//
// The hash is part of the on-disk format: it must never change.
func (l Layout) Salt(seriesID []byte) byte {
	if l.SaltBuckets < 2 {
		return 0
	}
	return byte(saltHash(seriesID) % uint64(l.SaltBuckets))
}

// saltHash reads eight bytes at a time (FxHash's rotate-xor-multiply step)
// and ends with murmur3's fmix64, whose avalanche makes the low bits that a
// small modulus keeps depend on every input bit: sequential UIDs, which differ
// in one byte, spread evenly. The length is mixed in first so that a series
// ID and the same ID with trailing zero bytes hash apart.
func saltHash(b []byte) uint64 {
	const k = 0x517cc1b727220a95
	h := uint64(len(b)) * k
	for ; len(b) >= 8; b = b[8:] {
		h = (bits.RotateLeft64(h, 5) ^ binary.LittleEndian.Uint64(b)) * k
	}
	if len(b) > 0 {
		var tail uint64
		for i, c := range b {
			tail |= uint64(c) << (8 * uint(i))
		}
		h = (bits.RotateLeft64(h, 5) ^ tail) * k
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// AppendRowKey appends the row key of a series for one base hour (seconds,
// a multiple of HourSeconds): salt, metric UID, hour, tag pairs. seriesID must
// come from AppendSeriesID or AppendSeriesIDFromRowKey with the same layout.
func (l Layout) AppendRowKey(dst []byte, seriesID []byte, baseHour uint32) []byte {
	if l.SaltBuckets >= 2 {
		dst = append(dst, l.Salt(seriesID))
	}
	mw := min(l.MetricWidth, len(seriesID))
	dst = append(dst, seriesID[:mw]...)
	dst = append(dst, byte(baseHour>>24), byte(baseHour>>16), byte(baseHour>>8), byte(baseHour))
	return append(dst, seriesID[mw:]...)
}

// AppendSeriesIDFromRowKey appends the series ID of the row key: the key
// without its salt and hour. It checks the key's shape like Parse does.
func (l Layout) AppendSeriesIDFromRowKey(dst []byte, rowKey []byte) ([]byte, error) {
	k, err := l.Parse(rowKey)
	if err != nil {
		return dst, err
	}
	sw := l.SaltWidth()
	dst = append(dst, rowKey[sw:sw+l.MetricWidth]...)
	return append(dst, k.Tags...), nil
}

// Key is a parsed row key.
type Key struct {
	Salt     byte
	Metric   uint64
	BaseHour uint32
	// Tags holds the raw tag pairs, each TagKWidth+TagVWidth bytes, aliasing
	// the parsed key. Use TagCount and TagAt to read them.
	Tags []byte
}

// Parse splits a row key into its parts. It checks the length, the salt
// against the bucket count and that tag keys are strictly ascending; it never
// panics, whatever the bytes.
func (l Layout) Parse(rowKey []byte) (Key, error) {
	if !l.valid() {
		return Key{}, fmt.Errorf("parse row key: %w", l.Validate())
	}
	hw := l.HeaderWidth()
	pw := l.PairWidth()
	if len(rowKey) < hw || (len(rowKey)-hw)%pw != 0 {
		return Key{}, fmt.Errorf("%w: length %d is not %d + a multiple of %d", ErrMalformedKey, len(rowKey), hw, pw)
	}
	var k Key
	b := rowKey
	if l.SaltWidth() == 1 {
		k.Salt = b[0]
		if int(k.Salt) >= l.SaltBuckets {
			return Key{}, fmt.Errorf("%w: salt %d not below %d buckets", ErrMalformedKey, k.Salt, l.SaltBuckets)
		}
		b = b[1:]
	}
	k.Metric = uid.Decode(b[:l.MetricWidth])
	b = b[l.MetricWidth:]
	k.BaseHour = uint32(uid.Decode(b[:4]))
	k.Tags = b[4:len(b):len(b)]
	kw := l.TagKWidth
	var prev uint64
	for off := 0; off < len(k.Tags); off += pw {
		tk := uid.Decode(k.Tags[off : off+kw])
		if off > 0 && tk <= prev {
			return Key{}, fmt.Errorf("%w: tag keys not strictly ascending at pair %d", ErrMalformedKey, off/pw)
		}
		prev = tk
	}
	return k, nil
}

// TagCount is the number of tag pairs in a parsed key.
func (l Layout) TagCount(k Key) int { return len(k.Tags) / l.PairWidth() }

// TagAt is the i-th tag pair of a parsed key, 0 <= i < TagCount(k).
func (l Layout) TagAt(k Key, i int) TagPair {
	p := k.Tags[i*l.PairWidth():]
	return TagPair{K: uid.Decode(p[:l.TagKWidth]), V: uid.Decode(p[l.TagKWidth:l.PairWidth()])}
}
