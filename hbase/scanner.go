package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
	"github.com/prom-hbase/prom-hbase/hbase/region"
)

// Row is one row of a scan. Its slices stay valid after the next call to
// Next (they point into the answer they came in), but the Cells slice
// itself is reused.
type Row struct {
	Key   []byte
	Cells []hrpc.Cell
}

// ScanOptions tune how a scan fetches.
type ScanOptions struct {
	// RowsPerCall caps the rows per round trip (0: 10000; the byte limit
	// usually ends a call first).
	RowsPerCall int
	// BytesPerCall caps the bytes per round trip (0: 2 MiB).
	BytesPerCall int
}

// Scanner iterates over the rows of a key range across regions. It reopens
// the scan where it stopped when a region moves or splits, so it neither
// loses nor repeats rows. Close must be called when stopping early.
type Scanner struct {
	c     *Client
	ctx   context.Context
	table string
	stop  []byte
	// stopIncl: the stop row itself is wanted, so a region ending at it
	// does not end the scan (its stop row is the next region's first).
	stopIncl bool
	rows     uint32
	pscan    *pb.Scan // the open request, its start moved as the scan goes

	region *RegionInfo
	conn   *region.Conn
	id     uint64
	seq    uint64
	open   bool

	results []hrpc.ScanResult
	next    int
	cellBuf []hrpc.Cell
	partial []hrpc.Cell // cells of a row the server sent in parts
	rowBuf  []hrpc.Cell
	row     Row
	lastKey []byte // the last complete row returned

	done   bool
	closed bool
	err    error
}

// Scan starts a scan of table. Nothing is sent before the first Next.
func (c *Client) Scan(ctx context.Context, table string, s *hrpc.Scan, opts ScanOptions) *Scanner {
	sc := &Scanner{c: c, ctx: ctx, table: table, stop: s.Stop, stopIncl: s.StopInclusive, rows: 10000}
	if opts.RowsPerCall > 0 {
		sc.rows = uint32(opts.RowsPerCall)
	}
	if s.Reversed {
		sc.err = errors.New("hbase: reversed scans are not supported by Scanner")
		return sc
	}
	cp := *s
	if opts.BytesPerCall > 0 {
		cp.MaxResultSize = uint64(opts.BytesPerCall)
	}
	sc.pscan, sc.err = cp.Proto()
	// hbase:meta orders keys as region names, not bytewise.
	if sc.err == nil && !isMeta(table) && len(s.Stop) > 0 && sc.pastStop(s.Start) {
		sc.done = true
	}
	return sc
}

// Next advances to the next row.
func (s *Scanner) Next() bool {
	for s.err == nil && !s.closed {
		for s.next < len(s.results) {
			r := s.results[s.next]
			if len(s.partial) > 0 && len(r.Cells) > 0 && !bytes.Equal(r.Cells[0].Row, s.partial[0].Row) {
				// A result is flagged partial when more cells of its row may
				// follow, as when the byte limit falls before deleted cells;
				// another row's result ends it, as Java's client has it.
				s.emitPartial()
				return true
			}
			s.next++
			if len(r.Cells) == 0 {
				continue
			}
			if r.Partial {
				s.c.partials.Add(1)
				s.partial = append(s.partial, r.Cells...)
				continue
			}
			cells := r.Cells
			if len(s.partial) > 0 {
				s.rowBuf = append(append(s.rowBuf[:0], s.partial...), r.Cells...)
				s.partial = s.partial[:0]
				cells = s.rowBuf
			}
			s.emit(cells)
			return true
		}
		if s.done {
			if len(s.partial) > 0 {
				s.emitPartial()
				return true
			}
			return false
		}
		s.fetch()
	}
	return false
}

// emitPartial makes the parts received of a row the current row.
func (s *Scanner) emitPartial() {
	s.rowBuf = append(s.rowBuf[:0], s.partial...)
	s.partial = s.partial[:0]
	s.emit(s.rowBuf)
}

func (s *Scanner) emit(cells []hrpc.Cell) {
	s.row = Row{Key: cells[0].Row, Cells: cells}
	s.lastKey = cells[0].Row
}

// At returns the current row.
func (s *Scanner) At() Row { return s.row }

// Err returns the error that ended the scan, if any.
func (s *Scanner) Err() error { return s.err }

// Close releases the server-side scanner if one is open.
func (s *Scanner) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.open && s.conn.Err() == nil {
		s.open = false
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 5*time.Second)
		defer cancel()
		// Best effort: a scanner we fail to close expires with its lease.
		_, _ = s.c.call(ctx, s.conn, hrpc.NewScanCloseCall(s.id, s.prio()))
	}
	return nil
}

func (s *Scanner) prio() uint32 {
	if isMeta(s.table) {
		return hrpc.HighPriority
	}
	return hrpc.NormalPriority
}

// closeLost closes a server-side scanner the client stops using, so it
// does not hold resources until its lease ends. Best effort, and brief: the
// server may be the reason the scan moves on.
func (s *Scanner) closeLost() {
	if s.conn.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Second)
	defer cancel()
	_, _ = s.conn.Call(ctx, hrpc.NewScanCloseCall(s.id, s.prio()))
}

// resume moves the scan's start to where the caller has not been yet,
// after the server-side scanner was lost.
func (s *Scanner) resume() {
	s.open = false
	switch {
	case len(s.partial) > 0:
		// Read the half-received row again, whole.
		s.pscan.StartRow = s.partial[0].Row
		s.pscan.IncludeStartRow = ptr(true)
		s.partial = s.partial[:0]
	case s.lastKey != nil:
		s.pscan.StartRow = s.lastKey
		s.pscan.IncludeStartRow = ptr(false)
	}
}

// pastStop reports whether a scan from key on returns nothing: key is past
// the stop row, or is it and the stop row is excluded.
func (s *Scanner) pastStop(key []byte) bool {
	c := bytes.Compare(key, s.stop)
	return c > 0 || (c == 0 && !s.stopIncl)
}

func ptr[T any](v T) *T { return &v }

// fetch makes one successful round trip or sets s.err.
func (s *Scanner) fetch() {
	var last error
	for attempt := 0; ; attempt++ {
		if attempt >= s.c.cfg.MaxAttempts {
			s.err = &RetryError{Attempts: attempt, Err: last}
			return
		}
		if attempt > 0 {
			if err := sleep(s.ctx, attempt-1, isCallQueueTooBig(last)); err != nil {
				s.err = errors.Join(err, last)
				return
			}
		}
		var call *hrpc.Call
		if !s.open {
			r, err := s.c.locate(s.ctx, s.table, s.pscan.StartRow)
			if err != nil {
				if s.ctx.Err() != nil || classify(err) == hrpc.Fatal {
					s.err = fmt.Errorf("scan %s: %w", s.table, err)
					return
				}
				last = err
				continue
			}
			conn, err := s.c.conn(s.ctx, r.Addr, hrpc.ClientService)
			if err != nil {
				if s.ctx.Err() != nil {
					s.err = err
					return
				}
				s.c.unreachable(r, err)
				last = err
				continue
			}
			s.region, s.conn = r, conn
			call = hrpc.NewScanOpenCall(r.Name, s.pscan, s.rows, s.prio())
		} else {
			call = hrpc.NewScanNextCall(s.id, s.rows, s.seq, s.prio())
		}
		block, err := s.c.call(s.ctx, s.conn, call)
		if err != nil {
			if s.ctx.Err() != nil {
				s.err = errors.Join(s.ctx.Err(), err)
				return
			}
			last = err
			kind := classify(err)
			if kind == hrpc.Fatal {
				s.err = fmt.Errorf("scan %s on %s: %w", s.table, s.conn.Addr(), err)
				return
			}
			s.c.noteRetry(kind, err)
			if s.open && kind == hrpc.Backoff {
				s.closeLost()
			}
			// Whatever the kind, the scan goes on from the last row
			// returned, on wherever the region is now: after a timeout
			// or a lost server that is meta's answer, read again.
			s.c.forget(kind, s.region, s.conn, err)
			s.resume()
			continue
		}
		resp := call.Response.(*pb.ScanResponse)
		if !s.open {
			s.id = resp.GetScannerId()
			s.seq = 0
			s.open = true
		} else {
			s.seq++
		}
		s.results, s.cellBuf, err = hrpc.DecodeScanResults(s.results[:0], s.cellBuf, resp, block)
		s.next = 0
		if err != nil {
			s.err = fmt.Errorf("scan %s: %w", s.table, err)
			return
		}
		more := resp.MoreResults == nil || resp.GetMoreResults()
		moreInRegion := more && (resp.MoreResultsInRegion == nil || resp.GetMoreResultsInRegion())
		if !moreInRegion {
			s.open = false // the server closed it
			end := s.region.End
			if !more || len(end) == 0 || (len(s.stop) > 0 && s.pastStop(end)) {
				s.done = true
			} else {
				s.pscan.StartRow = end
				s.pscan.IncludeStartRow = ptr(true)
			}
		}
		return
	}
}
