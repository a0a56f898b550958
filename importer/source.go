// Package importer brings history that predates remote_write into the store:
// it walks a Source unit by unit, writes each unit's series through
// store.Store.WriteHistory (closed hours as chunk cells), keeps which units are
// done so that a killed import resumes, reports progress, and can verify a
// unit by reading it back.
//
// It owns the import loop, its progress and its resume state (a small table
// of its own, state.go). It must not know where history comes from
// (Prometheus TSDB blocks, OpenTSDB tables: the sub-packages implement
// Source) nor the table layout of the store (package store's).
package importer

import (
	"context"

	"github.com/prometheus/prometheus/model/labels"

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
	// Bytes is the unit's size where the source keeps it (a block's files);
	// 0 when unknown. The summary reports it as the bytes read.
	Bytes int64
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

// Selector is implemented by a Source that imports only the series some
// matchers select (a Prometheus source given --match): verification reads
// the store with the same matchers (a series is selected when any of the
// sets matches it). A source without it is verified through the metric
// names its units hold.
type Selector interface {
	Matchers() [][]*labels.Matcher
}

// DropReporter is implemented by a Source that leaves out what the store
// cannot hold (OpenTSDB annotations, say): what it reports at the end of a
// run joins the summary's Dropped, beside the importer's own reasons.
type DropReporter interface {
	Dropped() []Dropped
}

// SeriesIterator yields a unit's series, each with its samples in time
// order. A series may come more than once in a unit (an OpenTSDB series comes
// once per row, an hour each; a long Prometheus series in pieces, each
// ending on an hour boundary where it can): the pieces of a series never
// repeat a timestamp, nor does one At. A source keeps each At to a bounded
// number of samples (the importer copies it into its batches). The slices of
// the SeriesIn returned by At are valid until the next call to Next; the
// histograms its samples point to are never reused by the source (the
// importer keeps the pointers until the batch is written).
type SeriesIterator interface {
	Next() bool
	At() store.SeriesIn
	Err() error
	Close() error
}
