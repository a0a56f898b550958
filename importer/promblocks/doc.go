// Package promblocks is an import source (importer.Source) that reads
// Prometheus TSDB blocks with Prometheus's own tsdb package: the blocks of a
// data directory, of a snapshot (POST /api/v1/admin/tsdb/snapshot, which
// also writes the head as a block), or one block directory.
//
// It owns finding the blocks, grouping them into units, and turning a
// block's series into importer pieces. It must not know the store's layout
// nor the import loop (package importer's).
//
// # Units
//
// A unit is one block, or several blocks whose time ranges overlap (a
// Prometheus with out-of-order ingestion writes such blocks, and so does a
// snapshot taken while a compaction is under way): their series are merged
// with Prometheus's own ChainedSeriesMerge, so a sample that two blocks
// hold is imported once. The unit's ID is its blocks' ULIDs joined with
// "+": the same on every run over the same blocks, whichever snapshot they
// are found in (a snapshot hard-links the blocks it copies), so that a
// later snapshot's import skips the blocks an earlier one imported.
//
// # What is read
//
// Every float and native histogram sample (integer or float counts,
// exponential or custom buckets), staleness markers included, within
// Options.MinTime..MaxTime and selected by any of Options.Matchers.
// Tombstones are honoured: a series or range deleted with
// /api/v1/admin/tsdb/delete_series is not imported. The head of a running
// Prometheus (its WAL: the last two to three hours) is in no block until
// it is compacted: a snapshot writes it as one; reading a data directory
// leaves it out (remote_write carries it). Out-of-order samples still in
// the head are not in a snapshot either (Prometheus writes only the
// in-order head into it); they reach a block with the next head
// compaction.
//
// # Memory
//
// Series are read one at a time from the block index, in label order;
// a series comes in pieces of about Options.PieceSamples samples, each
// ending on an hour boundary when it can (so that the importer can keep
// series-hours whole), at most twice that many. A block's size does not
// matter.
package promblocks
