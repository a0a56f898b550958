// Package store is the time-series store: the write path (series of float
// and native histogram samples -> UIDs -> row keys and cells -> one batched
// put), the history write path (WriteHistory: an importer's closed hours
// straight into the compactor's chunk cells), the read planner (matchers -> scans of the metrics' rows, their
// cells kept within a budget -> multi-gets of the hour rows not kept ->
// series in label order, as samples or as Prometheus chunks)
// and the compactor (closed hours -> XOR, histogram and float-histogram
// chunk cells, bit-exact; the cell layout itself is package cellcodec's).
//
// It owns the mapping between Prometheus's data model and the table layout of
// DESIGN.md sections 2 to 4. Beside what labels2uid keeps in the UID table, the
// store keeps two things there: the schema row "\x00schema" (family id, one
// decimal cell per pinned setting: uid.width.metric, uid.width.tagk,
// uid.width.tagv, salt.buckets, layout.version, the last upgraded in place
// from the previous cell layout), and a family meta holding
// metric metadata (row = metric family name, qualifiers type, unit, help).
//
// Labels with an empty value are dropped on write, as Prometheus treats them
// as absent; series without __name__ are refused (package seriesrules). It
// must not know HTTP, the remote-read or remote-write wire formats, nor which
// backend holds the tables.
package store

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
)

// ErrInvalidInput marks errors caused by the caller's data (a bad series or
// query): the request must be answered 400 and nothing of it was written.
// Every other error from the store is a storage fault (retryable).
var ErrInvalidInput = errors.New("invalid input")

// Sample is one float sample; T is in milliseconds. It is the cell codec's
// own type, so that decoded rows need no copy.
type Sample = cellcodec.Sample

// HistogramSample is one native histogram sample (integer or float), every
// field as written.
type HistogramSample = cellcodec.HistogramSample

// Query selects series and their samples in [Start, End] (milliseconds,
// inclusive).
type Query struct {
	Start, End int64
	Matchers   []*labels.Matcher
	// SeriesOnly asks only for the label sets (remote read hint func=series).
	SeriesOnly bool
}

// Series is one series of a read: its labels, its float samples and its
// histogram samples, each sorted by time; no timestamp appears twice in
// either, nor in both (a series that switched between floats and histograms
// has each sample in the slice of its kind).
type Series struct {
	Labels     labels.Labels
	Samples    []Sample
	Histograms []HistogramSample
}

// SeriesSet iterates over series in label order. The Series returned by At is
// valid only until the next call to Next or Close. Close releases what an
// early stop leaves open; it is safe to call more than once, and Next
// reports false after it.
type SeriesSet interface {
	Next() bool
	At() Series
	Err() error
	Close()
}

// Metadata is a metric's type, unit and help (Remote-Write 2.0).
type Metadata struct {
	MetricFamilyName string
	Type             string // counter, gauge, histogram, gaugehistogram, summary, info, stateset, unknown
	Unit             string
	Help             string
}

// Querier and Appender are what the HTTP layer needs of a store; *Store
// implements both.
type Appender interface {
	// Write stores every sample of the batch and returns nil only when all are
	// durable. An error wrapping ErrInvalidInput means nothing was written.
	Write(ctx context.Context, batch []SeriesIn) error
	// WriteMetadata stores metric metadata (last write wins).
	WriteMetadata(ctx context.Context, md []Metadata) error
}

type Querier interface {
	Select(ctx context.Context, q Query) SeriesSet
}

// ChunkQuerier is what a streamed remote read needs: series as Prometheus
// chunks. *Store implements it; a Querier without it has its samples encoded
// by the caller.
type ChunkQuerier interface {
	SelectChunks(ctx context.Context, q Query) ChunkSeriesSet
}

// Chunk is one chunk of a ChunkSeries: Data is a Prometheus chunk as
// tsdb/chunkenc writes it (header included; XOR, histogram or float
// histogram, as Encoding says), holding Samples samples from
// MinTime to MaxTime (milliseconds, inclusive).
type Chunk struct {
	MinTime, MaxTime int64
	Encoding         chunkenc.Encoding
	Samples          int
	Data             []byte
}

// ChunkSeries is one series of a chunked read: its labels and chunks in time
// order, not overlapping, holding exactly the series' samples in the query's
// range. A stored chunk that lies wholly in the range and that no later raw
// sample overlaps is passed through byte for byte; samples at the range's
// edges and raw samples are cut into new chunks of at most 120 samples, as
// Prometheus's head cuts them.
type ChunkSeries struct {
	Labels labels.Labels
	Chunks []Chunk
}

// ChunkSeriesSet iterates over chunk series in label order, as SeriesSet does
// over sample series; the ChunkSeries returned by At (its chunks' bytes
// included) is valid only until the next call to Next or Close.
type ChunkSeriesSet interface {
	Next() bool
	At() ChunkSeries
	Err() error
	Close()
}

// SeriesIn is one series of a write: labels as received (the store validates
// them: names sorted, unique, non-empty, valid), its float samples and its
// native histogram samples.
type SeriesIn struct {
	Labels     []labels.Label
	Samples    []Sample
	Histograms []HistogramSample
	// ID is the series ID that this store reported for Labels in an
	// earlier write (ReportID), or nil. With an ID, Write neither checks
	// Labels against the label rules again nor looks up their UIDs: the
	// caller vouches that Labels are the ones the ID was reported for
	// (they still name the series in errors). UIDs never change once
	// assigned, so an ID stays valid for the life of the tables.
	ID []byte
	// ReportID asks Write to set ID, a slice of its own, once it has
	// resolved Labels: for every series it did not refuse, whether or not
	// the write itself then succeeds.
	ReportID bool
}
