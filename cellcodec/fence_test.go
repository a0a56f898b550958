package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

// TestFenceCell: the fence qualifier sorts after every raw and chunk
// qualifier, reads as a chunk cell of no chunks, and a row's decoders skip
// it; a fence of the wrong length is malformed.
func TestFenceCell(t *testing.T) {
	h := testHour
	fq := AppendFenceQualifier(nil)
	if !IsFenceQualifier(fq) || !IsChunkQualifier(fq) {
		t.Fatalf("fence %x: IsFenceQualifier %v, IsChunkQualifier %v", fq, IsFenceQualifier(fq), IsChunkQualifier(fq))
	}
	// Each fold counts one more, in as few bytes as the count needs.
	var fv []byte
	for n := uint64(1); n <= 300; n++ {
		next, err := AppendNextFence(nil, fv)
		if got, err2 := fenceCount(next); err != nil || err2 != nil || got != n || len(next) != (map[bool]int{true: 1, false: 2})[n < 128] {
			t.Fatalf("fold %d writes %x (%v, count %d, %v)", n, next, err, got, err2)
		}
		fv = next
	}
	samples := []Sample{{h + 1000, 1}, {h + 2000, math.Copysign(0, -1)}, {h + 3000, 3}}
	cq, cv := chunkOf(t, h, samples[1:])
	dq, _ := denseOf(t, h, samples[1:])
	for _, q := range [][]byte{AppendRawQualifier(nil, HourMillis-1), cq, dq, AppendChunkQualifier(nil, EncPackedXOR, HourMillis-1, HourMillis-1)} {
		if IsFenceQualifier(q) || bytes.Compare(q, fq) >= 0 {
			t.Errorf("qualifier %x: IsFenceQualifier %v, or sorts at or after the fence's %x", q, IsFenceQualifier(q), fq)
		}
	}
	var r CellChunks
	if r.Reset(h, fq, fv); r.Next() || r.Err() != nil {
		t.Fatalf("fence cell: a chunk %+v, or error %v", r.At(), r.Err())
	}
	for _, bad := range [][]byte{nil, {}, {0}, {0x80}, append(slices.Clone(fv), 0), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if r.Reset(h, fq, bad); r.Next() || !errors.Is(r.Err(), ErrMalformedCell) {
			t.Errorf("fence value %x: error %v, want ErrMalformedCell", bad, r.Err())
		}
		if _, err := AppendNextFence(nil, bad); bad != nil && !errors.Is(err, ErrMalformedCell) {
			t.Errorf("fold of a fence holding %x: error %v, want ErrMalformedCell", bad, err)
		}
	}
	row := testCells{rawCell(h, samples[0]), {cq, cv}, {fq, fv}}
	got, err := AppendRowSamples(nil, h, row, math.MinInt64, math.MaxInt64)
	if err != nil || !sameSamples(got, samples) {
		t.Fatalf("row with a fence reads %v, %v; want %v", got, err, samples)
	}
	pts, err := AppendRowPoints(nil, h, row, math.MinInt64, math.MaxInt64)
	if err != nil || len(pts) != len(samples) {
		t.Fatalf("row with a fence reads %d points, %v; want %d", len(pts), err, len(samples))
	}
}
