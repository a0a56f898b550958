package cellcodec

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// TestFenceCell: the fence qualifier sorts after every raw and chunk
// qualifier, reads as a chunk cell of no chunks, and a row's decoders skip
// it; a fence of the wrong length is malformed.
func TestFenceCell(t *testing.T) {
	h := testHour
	fq, fv := AppendFenceQualifier(nil), AppendFenceValue(nil, 0x0102030405060708)
	if !IsFenceQualifier(fq) || !IsChunkQualifier(fq) || len(fv) != FenceValueLen {
		t.Fatalf("fence %x=%x: IsFenceQualifier %v, IsChunkQualifier %v", fq, fv, IsFenceQualifier(fq), IsChunkQualifier(fq))
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
	for _, bad := range [][]byte{nil, fv[:7], append(fv, 0)} {
		if r.Reset(h, fq, bad); r.Next() || !errors.Is(r.Err(), ErrMalformedCell) {
			t.Errorf("fence value %x: error %v, want ErrMalformedCell", bad, r.Err())
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
