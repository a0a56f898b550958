package hrpc

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Scan describes a scan of a key range.
type Scan struct {
	Start, Stop []byte
	// StartExclusive skips Start itself (used when a scan resumes after a
	// row it has already returned).
	StartExclusive bool
	Families       [][]byte
	Filter         Filter
	Reversed       bool
	// StopInclusive includes Stop (meta lookups).
	StopInclusive bool
	// MaxResultSize caps the bytes per call (0: 2 MiB, as Java does).
	MaxResultSize uint64
	// PRead asks for positional reads, better for short scans.
	PRead bool
	// CellsPerFamily, when above 0, returns at most that many cells of each
	// row and family: HBase counts them after resolving deletes and
	// versions, unlike FirstKeyOnlyFilter, which on a family with
	// NEW_VERSION_BEHAVIOR sees deleted cells and can hide a whole row.
	CellsPerFamily uint32
}

// Proto builds the Scan message.
func (s *Scan) Proto() (*pb.Scan, error) {
	size := s.MaxResultSize
	if size == 0 {
		size = 2 << 20
	}
	m := &pb.Scan{
		StartRow:        s.Start,
		StopRow:         s.Stop,
		MaxResultSize:   proto.Uint64(size),
		IncludeStartRow: proto.Bool(!s.StartExclusive),
		IncludeStopRow:  proto.Bool(s.StopInclusive),
	}
	if s.CellsPerFamily > 0 {
		m.StoreLimit = proto.Uint32(s.CellsPerFamily)
	}
	if s.Reversed {
		m.Reversed = proto.Bool(true)
	}
	if s.PRead {
		m.ReadType = pb.Scan_PREAD.Enum()
	}
	for _, f := range s.Families {
		m.Column = append(m.Column, &pb.Column{Family: f})
	}
	if s.Filter != nil {
		f, err := s.Filter.FilterProto()
		if err != nil {
			return nil, fmt.Errorf("scan filter: %w", err)
		}
		m.Filter = f
	}
	return m, nil
}

func scanCall(req *pb.ScanRequest, priority uint32) *Call {
	return &Call{
		Service:  ClientService,
		Method:   "Scan",
		Priority: priority,
		Request:  req,
		Response: &pb.ScanResponse{},
	}
}

// NewScanOpenCall opens a scanner on a region; the answer already carries
// the first rows.
func NewScanOpenCall(region []byte, s *pb.Scan, rows uint32, priority uint32) *Call {
	return scanCall(&pb.ScanRequest{
		Region:                  RegionSpecifier(region),
		Scan:                    s,
		NumberOfRows:            proto.Uint32(rows),
		ClientHandlesPartials:   proto.Bool(true),
		ClientHandlesHeartbeats: proto.Bool(true),
	}, priority)
}

// NewScanNextCall fetches the next rows of an open scanner. seq counts the
// next calls from 0; the server rejects a repeated or skipped number.
func NewScanNextCall(scannerID uint64, rows uint32, seq uint64, priority uint32) *Call {
	return scanCall(&pb.ScanRequest{
		ScannerId:               proto.Uint64(scannerID),
		NumberOfRows:            proto.Uint32(rows),
		NextCallSeq:             proto.Uint64(seq),
		ClientHandlesPartials:   proto.Bool(true),
		ClientHandlesHeartbeats: proto.Bool(true),
	}, priority)
}

// NewScanCloseCall closes a scanner on the server.
func NewScanCloseCall(scannerID uint64, priority uint32) *Call {
	return scanCall(&pb.ScanRequest{
		ScannerId:    proto.Uint64(scannerID),
		NumberOfRows: proto.Uint32(0),
		CloseScanner: proto.Bool(true),
	}, priority)
}

// ScanResult is one row, or part of one when Partial.
type ScanResult struct {
	Cells   []Cell
	Partial bool
}

// DecodeScanResults appends the results of a scan answer to dst, taking
// cells from block (or from the inline results when the server sent no
// block). Cells are appended to cellBuf, which is returned for reuse.
func DecodeScanResults(dst []ScanResult, cellBuf []Cell, r *pb.ScanResponse, block []byte) ([]ScanResult, []Cell, error) {
	if counts := r.GetCellsPerResult(); len(counts) > 0 {
		partials := r.GetPartialFlagPerResult()
		total := 0
		for _, n := range counts {
			total += int(n)
		}
		// The counts come from the server's message, the cells from the
		// block, each at least a 12-byte header and keyOverhead: counts
		// that claim more cells than the block can hold must fail here,
		// not size cellBuf (a frame claiming 2^32 cells made a buffer of
		// hundreds of gigabytes).
		if total > len(block)/(12+keyOverhead) {
			return dst, cellBuf, fmt.Errorf("%w: %d cells claimed in a block of %d bytes", ErrCellBlock, total, len(block))
		}
		if cap(cellBuf) < total {
			cellBuf = make([]Cell, 0, total)
		}
		cellBuf = cellBuf[:0]
		var err error
		for i, n := range counts {
			start := len(cellBuf)
			cellBuf, block, err = DecodeCells(cellBuf, block, int(n))
			if err != nil {
				return dst, cellBuf, fmt.Errorf("scan result %d: %w", i, err)
			}
			dst = append(dst, ScanResult{Cells: cellBuf[start:len(cellBuf):len(cellBuf)], Partial: i < len(partials) && partials[i]})
		}
		return dst, cellBuf, nil
	}
	for i, res := range r.GetResults() {
		var cells []Cell
		var err error
		cells, block, err = ResultCells(nil, res, block)
		if err != nil {
			return dst, cellBuf, fmt.Errorf("scan result %d: %w", i, err)
		}
		dst = append(dst, ScanResult{Cells: cells, Partial: res.GetPartial()})
	}
	return dst, cellBuf, nil
}
