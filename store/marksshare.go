package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Every query reads the compaction table's marks of its hours once
// (rawhours.go): one scan, one RPC to HBase, whatever the query reads after.
// Measured (BENCHMARKS.md, "Streamed read: the marks scan and the early
// read") that scan is a fifth of HBase's CPU on make bench's streamed read
// and a tenth of the adapter's, mostly what HBase and the client spend per
// RPC, since on compacted hours it finds nothing. Queries that come
// together (four in flight, a dashboard's panels) therefore share it, as
// the write path shares Multis (hbase/coalesce.go): while one read of
// marks is under way, the queries that want marks wait for the next one,
// which reads the union of their metrics and hours; each gets the marks of
// its own metrics and hours. A query never takes a read that was sent
// before it asked: its marks must be read after it began (rawhours.go), and
// a read sent after it asked is. A read that finds no other read under way
// goes out at once, so a query alone waits for nothing more than before.
// A read that hangs holds the queries that ask meanwhile until it ends,
// each at most until its own context does; each would have hung on the
// same region on its own.

// marksShare is the state of the Store's shared reads of marks.
type marksShare struct {
	mu sync.Mutex
	// reading: a read of marks is under way; queries that ask meanwhile
	// go into waiting, for the next read.
	reading bool
	waiting []*marksRead
	// reads counts the reads sent, queries the queries they served.
	reads, queries atomic.Int64
}

// startMarks starts reading the marks of a query's hours: in the
// background when the first group may read early, else at once, which
// spares the query a goroutine and its hand-offs. When another read is
// under way, the query waits for the next (marksShare).
func (s *Store) startMarks(ctx context.Context, metrics map[uint64]bool, startHour, endHour uint32) *marksRead {
	m := &marksRead{done: make(chan struct{}), ctx: ctx, metrics: metrics, startHour: startHour, endHour: endHour}
	sh := &s.read.marks
	sh.mu.Lock()
	if sh.reading {
		sh.waiting = append(sh.waiting, m)
		sh.mu.Unlock()
		return m
	}
	sh.reading = true
	sh.mu.Unlock()
	if s.mayReadEarly(startHour) {
		go s.readMarks([]*marksRead{m}, true)
	} else {
		s.readMarks([]*marksRead{m}, false)
	}
	return m
}

// readMarks reads the marks of batch, then, as long as queries waited
// meanwhile, theirs. owned: it runs in a goroutine of its own; otherwise it
// runs in the first query's, which goes on with its query after the first
// read and leaves the next ones to a goroutine.
func (s *Store) readMarks(batch []*marksRead, owned bool) {
	sh := &s.read.marks
	for {
		s.readMarksOnce(batch)
		sh.mu.Lock()
		batch, sh.waiting = sh.waiting, nil
		if len(batch) == 0 {
			sh.reading = false
			sh.mu.Unlock()
			return
		}
		sh.mu.Unlock()
		if !owned {
			go s.readMarks(batch, true)
			return
		}
	}
}

// readMarksOnce reads the marks of the queries of batch (one read of the
// union of their metrics and hours) and hands each its own.
func (s *Store) readMarksOnce(batch []*marksRead) {
	sh := &s.read.marks
	sh.reads.Add(1)
	sh.queries.Add(int64(len(batch)))
	ctx, metrics, startHour, endHour := batch[0].ctx, batch[0].metrics, batch[0].startHour, batch[0].endHour
	if len(batch) > 1 {
		// The read serves queries whose contexts end apart: it ends when
		// the last of them has.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		var left atomic.Int64
		left.Store(int64(len(batch)))
		metrics = make(map[uint64]bool, len(metrics))
		for _, m := range batch {
			stop := context.AfterFunc(m.ctx, func() {
				if left.Add(-1) == 0 {
					cancel()
				}
			})
			defer stop()
			for id := range m.metrics {
				metrics[id] = true
			}
			startHour, endHour = min(startHour, m.startHour), max(endHour, m.endHour)
		}
	}
	if hook := s.read.beforeMarks; hook != nil {
		hook()
	}
	raw, err := s.findRawHours(ctx, metrics, startHour, endHour)
	at := time.Now()
	for _, m := range batch {
		m.raw, m.err, m.at = raw, err, at
		if len(batch) > 1 {
			m.raw = raw.of(m.metrics, m.startHour, m.endHour)
		}
		close(m.done)
	}
}

// of is the part of r of metrics and hours startHour to endHour; nil when
// none.
func (r rawHours) of(metrics map[uint64]bool, startHour, endHour uint32) rawHours {
	var out rawHours
	for rh := range r {
		if metrics[rh.metric] && rh.hour >= startHour && rh.hour <= endHour {
			if out == nil {
				out = rawHours{}
			}
			out[rh] = struct{}{}
		}
	}
	return out
}
