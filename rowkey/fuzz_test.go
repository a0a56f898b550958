package rowkey

import (
	"bytes"
	"github.com/prom-hbase/prom-hbase/uid"
	"testing"
)

// fuzzLayout maps arbitrary fuzz input to a valid layout.
func fuzzLayout(salt uint16, mw, kw, vw uint8) Layout {
	return Layout{
		SaltBuckets: int(salt % (MaxSaltBuckets + 1)),
		MetricWidth: 1 + int(mw%8),
		TagKWidth:   1 + int(kw%8),
		TagVWidth:   1 + int(vw%8),
	}
}

// FuzzRoundTrip builds a key from random UIDs under a random layout and
// parses it back.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint16(0), uint8(2), uint8(2), uint8(3), uint64(1), uint32(3600), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(20), uint8(7), uint8(0), uint8(7), ^uint64(0), ^uint32(0), []byte{0xff, 0, 0x0a, 0x85})
	f.Add(uint16(256), uint8(0), uint8(7), uint8(0), uint64(0), uint32(0), []byte{})
	f.Fuzz(func(t *testing.T, salt uint16, mw, kw, vw uint8, metric uint64, hour uint32, tagBytes []byte) {
		l := fuzzLayout(salt, mw, kw, vw)
		metric &= uid.Max(l.MetricWidth)
		// Tags from the bytes: 16 bytes per pair, keys made distinct.
		var tags []TagPair
		seen := map[uint64]bool{}
		for b := tagBytes; len(b) >= 2; {
			n := min(len(b), 16)
			var k, v uint64
			for i, c := range b[:n] {
				if i < n/2 {
					k = k<<8 | uint64(c)
				} else {
					v = v<<8 | uint64(c)
				}
			}
			b = b[n:]
			k &= uid.Max(l.TagKWidth)
			if !seen[k] {
				seen[k] = true
				tags = append(tags, TagPair{K: k, V: v & uid.Max(l.TagVWidth)})
			}
		}
		SortTags(tags)
		checkRoundTrip(t, l, metric, tags, hour)
	})
}

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and what it
// accepts must be a key that the builders produce again.
func FuzzParse(f *testing.F) {
	f.Add(uint16(0), uint8(2), uint8(2), uint8(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	f.Add(uint16(4), uint8(0), uint8(0), uint8(0), []byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint16(300), uint8(255), uint8(255), uint8(255), []byte{})
	f.Fuzz(func(t *testing.T, salt uint16, mw, kw, vw uint8, key []byte) {
		l := fuzzLayout(salt, mw, kw, vw)
		k, err := l.Parse(key)
		sid, err2 := l.AppendSeriesIDFromRowKey(nil, key)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse says %v, AppendSeriesIDFromRowKey %v", err, err2)
		}
		if err != nil {
			return
		}
		tags := make([]TagPair, l.TagCount(k))
		for i := range tags {
			tags[i] = l.TagAt(k, i)
		}
		if err := l.CheckSeries(k.Metric, tags); err != nil {
			t.Fatalf("parsed series invalid: %v", err)
		}
		if !bytes.Equal(sid, l.AppendSeriesID(nil, k.Metric, tags)) {
			t.Fatalf("series ID %x does not rebuild from the parsed parts", sid)
		}
		// The salt byte of arbitrary bytes need not be the series' hash; the
		// rest of the key must rebuild exactly.
		rebuilt := l.AppendRowKey(nil, sid, k.BaseHour)
		sw := l.SaltWidth()
		if !bytes.Equal(rebuilt[sw:], key[sw:]) {
			t.Fatalf("key %x rebuilds as %x", key, rebuilt)
		}
	})
}
