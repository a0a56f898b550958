// Package importer brings history that predates remote_write into the store:
// it walks a Source unit by unit, writes each unit's series through
// store.Store.WriteHistory (closed hours as chunk cells), keeps which units are
// done so that a killed import resumes, reports progress, and can verify a
// unit by reading it back.
//
// It owns the import loop, its progress and its resume state. It must not know
// where history comes from (Prometheus TSDB blocks, OpenTSDB tables: the
// sub-packages implement Source) nor the table layout (package store's).
package importer

import (
	"context"

	"github.com/prom-hbase/prom-hbase/store"
)

// Unit is the piece of history that is imported, resumed and verified as a
// whole: a Prometheus block, or an OpenTSDB metric over a span of hours.
type Unit struct {
	// ID names the unit stably across runs (a block's ULID; an OpenTSDB
	// metric and hour span): the resume state is keyed by it.
	ID string
	// MinTime and MaxTime bound the unit's samples (milliseconds, inclusive).
	MinTime, MaxTime int64
	// Series and Samples are what the source knows of the unit's size before
	// reading it (a block's meta.json); 0 when unknown. Progress uses them.
	Series, Samples int64
}

// Source is history to import.
type Source interface {
	// Units lists the units to import, oldest first.
	Units(ctx context.Context) ([]Unit, error)
	// Open iterates over a unit's series.
	Open(ctx context.Context, u Unit) (SeriesIterator, error)
	// Close releases the source.
	Close() error
}

// SeriesIterator yields a unit's series, each with its samples in time
// order. A series may come more than once in a unit (an OpenTSDB series comes
// once per row, an hour each); samples of one series never repeat a timestamp
// within one At. The SeriesIn returned by At is valid until the next call to
// Next.
type SeriesIterator interface {
	Next() bool
	At() store.SeriesIn
	Err() error
	Close() error
}
