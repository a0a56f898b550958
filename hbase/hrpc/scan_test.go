package hrpc

import (
	"errors"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// TestDecodeScanResultsCounts: a scan answer's cells_per_result are the
// server's word, the cells are the block's; counts that claim more cells
// than the block holds fail as a malformed block, before anything is sized
// by them (a claim of 2^32 cells once asked for a buffer of hundreds of
// gigabytes), and counts the block bears out decode.
func TestDecodeScanResultsCounts(t *testing.T) {
	block := AppendKeyValue(nil, []byte("r"), []byte("f"), []byte("q"), 1, TypePut, []byte("v"))
	block = AppendKeyValue(block, []byte("r"), []byte("f"), []byte("q2"), 1, TypePut, nil)
	for _, counts := range [][]uint32{{1 << 31, 1 << 31}, {3}, {0xFFFFFFFF}} {
		_, buf, err := DecodeScanResults(nil, nil, &pb.ScanResponse{CellsPerResult: counts}, block)
		if !errors.Is(err, ErrCellBlock) {
			t.Errorf("counts %v over a block of 2 cells: err %v, want ErrCellBlock", counts, err)
		}
		if cap(buf) > 2 {
			t.Errorf("counts %v: a cell buffer of %d sized by them", counts, cap(buf))
		}
	}
	res, _, err := DecodeScanResults(nil, nil, &pb.ScanResponse{CellsPerResult: []uint32{1, 1}, PartialFlagPerResult: []bool{true}}, block)
	if err != nil || len(res) != 2 || string(res[1].Cells[0].Qualifier) != "q2" || !res[0].Partial || res[1].Partial {
		t.Fatalf("two results of one cell: %+v, %v", res, err)
	}
}
