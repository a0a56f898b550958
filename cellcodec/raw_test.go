package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// staleNaN is Prometheus's staleness marker (model/value.StaleNaN).
const staleNaN = 0x7ff0000000000002

func TestRawGolden(t *testing.T) {
	q := AppendRawQualifier(nil, 3599_999)
	if want := []byte{0x00, 0x36, 0xee, 0x7f}; !bytes.Equal(q, want) {
		t.Errorf("qualifier %x, want %x", q, want)
	}
	v := AppendRawValue(nil, math.Float64frombits(staleNaN))
	if want := []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 0x02}; !bytes.Equal(v, want) {
		t.Errorf("stale marker value %x, want %x", v, want)
	}
	if v := AppendRawValue(nil, 1.5); !bytes.Equal(v, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("1.5 encodes as %x", v)
	}
}

func TestRawRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bits := []uint64{
		staleNaN, 0x7ff8000000000001, 0x7ff8000000000000, 0xfff8000000000000,
		0x7ff0000000000001, 0xffffffffffffffff, 0x7ff0000000000000, 0x8000000000000000, 0,
	}
	for range 1000 {
		bits = append(bits, rng.Uint64())
	}
	for i, b := range bits {
		off := uint32(i*7919) % HourMillis
		q := AppendRawQualifier(nil, off)
		val := AppendRawValue(nil, math.Float64frombits(b))
		gotOff, v, err := DecodeRaw(q, val)
		if err != nil || gotOff != off || math.Float64bits(v) != b {
			t.Fatalf("%#x at %d: decoded %d, %#x, %v", b, off, gotOff, math.Float64bits(v), err)
		}
		if !IsRawQualifier(q) || IsChunkQualifier(q) {
			t.Fatalf("qualifier %x misclassified", q)
		}
	}
}

func TestDecodeRawErrors(t *testing.T) {
	v := AppendRawValue(nil, 1)
	for _, tc := range []struct {
		name   string
		q, val []byte
	}{
		{"short qualifier", []byte{0, 0, 1}, v},
		{"long qualifier", []byte{0, 0, 0, 1, 0}, v},
		{"offset beyond the hour", AppendRawQualifier(nil, HourMillis), v},
		{"short value", AppendRawQualifier(nil, 1), v[:7]},
		{"empty value", AppendRawQualifier(nil, 1), nil},
	} {
		if _, _, err := DecodeRaw(tc.q, tc.val); !errors.Is(err, ErrMalformedCell) {
			t.Errorf("%s: error %v, want ErrMalformedCell", tc.name, err)
		}
	}
}

// TestQualifierOrder checks the property the row merge relies on: in a
// backend's bytewise order raw cells come in time order, and chunk cells
// after all of them, in the order of their first samples.
func TestQualifierOrder(t *testing.T) {
	chunk := AppendChunkQualifier(nil, chunkenc.EncXOR, 0, 0)
	prevChunk := chunk
	for _, off := range []uint32{1, 255, 256, 65535, 65536, 1 << 20, HourMillis - 1} {
		q := AppendChunkQualifier(nil, chunkenc.EncXOR, off, off)
		if bytes.Compare(prevChunk, q) >= 0 {
			t.Errorf("chunk qualifier of %d does not sort after its predecessor", off)
		}
		prevChunk = q
	}
	prev := AppendRawQualifier(nil, 0)
	for _, off := range []uint32{1, 255, 256, 65535, 65536, 1 << 20, HourMillis - 1} {
		q := AppendRawQualifier(nil, off)
		if bytes.Compare(prev, q) >= 0 {
			t.Errorf("qualifier of %d does not sort after its predecessor", off)
		}
		if bytes.Compare(q, chunk) >= 0 {
			t.Errorf("qualifier of %d sorts after the chunk qualifier", off)
		}
		prev = q
	}
	if !IsChunkQualifier(chunk) || IsRawQualifier(chunk) {
		t.Errorf("chunk qualifier %x misclassified", chunk)
	}
}

func TestRawAllocs(t *testing.T) {
	q := make([]byte, 0, RawQualifierLen)
	v := make([]byte, 0, RawValueLen)
	allocs := testing.AllocsPerRun(100, func() {
		q = AppendRawQualifier(q[:0], 1234)
		v = AppendRawValue(v[:0], 42)
		if _, _, err := DecodeRaw(q, v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per raw encode+decode", allocs)
	}
}

func BenchmarkAppendRawCell(b *testing.B) {
	var q, v []byte
	for b.Loop() {
		q = AppendRawQualifier(q[:0], 1234)
		v = AppendRawValue(v[:0], 42.5)
	}
}

func BenchmarkDecodeRaw(b *testing.B) {
	q := AppendRawQualifier(nil, 1234)
	v := AppendRawValue(nil, 42.5)
	for b.Loop() {
		if _, _, err := DecodeRaw(q, v); err != nil {
			b.Fatal(err)
		}
	}
}
