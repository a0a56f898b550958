// Package opentsdb is an import source (importer.Source) that reads the
// history an OpenTSDB 2.x keeps on HBase: its data table (`tsdb`) and its
// UID table (`tsdb-uid`), on the HBase the store uses, read with package
// hbase's scanner. OpenTSDB need not run.
//
// It owns OpenTSDB's storage format as 2.4 writes it, and the mapping of
// OpenTSDB names to Prometheus names. It must not know the store's layout
// nor the import loop (package importer's).
//
// # What is read
//
// The UID table's family "name" maps UIDs to names (qualifiers metrics,
// tagk, tagv; names are ISO-8859-1 bytes, as OpenTSDB writes them). A name
// may have two UIDs there: two TSDs assigning one new name at once each
// write a UID's reverse mapping, and only one wins the forward mapping
// (family "id"), the UID the data rows use. The loser's UID leaks; for a
// metric with several UIDs the source reads the forward mapping. A data
// row key is [salt][metric UID][base time, u32 seconds][tagk UID, tagv UID]...
// with the widths of Options (OpenTSDB's tsd.storage.uid.width.* and
// tsd.storage.salt.width); the rows of a metric are read in every salt
// bucket 0..SaltBuckets-1, as OpenTSDB's own scans read them. The row's
// family "t" holds, per column:
//
//   - a 2-byte qualifier: one point, offset in seconds << 4 | flags (bit 3:
//     float; low 3 bits: value length - 1). As OpenTSDB does, the value's
//     own length wins over the flags, and an 8-byte value flagged as a
//     4-byte float (written so by early versions) is read as the float in
//     its last 4 bytes when its first 4 are zero;
//   - a 4-byte qualifier whose first nibble is 0xF: one point, offset in
//     milliseconds << 6 | flags;
//   - a longer even qualifier: a compacted column, the points' qualifiers
//     concatenated (seconds and milliseconds mixed) and their values
//     concatenated, followed by one meta byte;
//   - an odd qualifier: an extended type named by its first byte. Appends
//     (0x05, written with tsd.storage.enable_appends) hold (qualifier,
//     value) pairs in the value and are read like points. Annotations (0x01)
//     and histograms (0x06) have no Prometheus float counterpart and are
//     skipped and counted (Stats), as are other prefixes.
//
// Integers (1, 2, 4 or 8 bytes, big-endian, signed) become float64: exact up
// to 2^53 in magnitude, rounded to the nearest float64 beyond (2^53+1
// becomes 2^53). Floats (4 or 8 bytes, IEEE 754) are
// converted exactly. A column in a layout OpenTSDB never writes (a value
// length its flags cannot have, a compacted value its qualifiers and meta
// byte do not account for byte for byte, a float of 8 bytes flagged 4 whose
// first 4 are not zero) fails the unit with the row key, unless
// Options.SkipCorrupt, which skips and counts the column instead.
//
// A row may hold one instant twice: a compacted column and a raw cell
// written later, a second and a millisecond qualifier for the same instant,
// an append column written twice at one offset. The source keeps the point
// of the column with the highest HBase timestamp, and within a column the
// later one: what OpenTSDB's compaction and queries keep with
// tsd.storage.fix_duplicates=true (without it, OpenTSDB refuses to answer
// for a row whose duplicates differ). Not followed:
// tsd.storage.use_otsdb_timestamp, under which OpenTSDB keeps the largest or
// smallest value instead.
//
// # Names
//
// A Prometheus user can predict every name:
//
//   - the metric name: every character outside [a-zA-Z0-9_:] becomes '_'
//     (so sys.cpu.user becomes sys_cpu_user, and each non-ASCII letter one
//     '_'); a leading digit gets a '_' in front; Options.MetricPrefix, when
//     set, goes in front of the result;
//   - tag keys become label names the same way, without ':' (label names
//     are [a-zA-Z_][a-zA-Z0-9_]*); a result starting with "__", reserved by
//     Prometheus, gets "tag" in front (__foo becomes tag__foo);
//   - tag values are kept as they are (decoded from ISO-8859-1, as every
//     name is).
//
// Two OpenTSDB names that map to one Prometheus name (a.b and a_b) would
// merge different series into one, mixing their samples silently. New
// refuses such a pair among the metrics to import, and among all the UID
// table's tag keys, naming both: the metric list (Options.Metrics) leaves
// one metric out; tag keys can only be renamed in OpenTSDB.
//
// # Units
//
// A unit is one metric over one span of hours (Options.SpanHours, a UTC day
// by default, aligned on the epoch), clipped to Options.MinTime and MaxTime;
// its ID, "opentsdb:<metric>:<min ms>-<max ms>", names the metric and the
// whole span, not the clipped bounds: it is the same on every run, so that
// the importer's resume state applies (the importer keys that state by the
// options as given too, and a retention that moves MinTime on between runs
// only shrinks what a span done already covered). Units
// lists only the spans between each metric's first and last row (found by
// a few one-row probes, per salt bucket). A unit scans the rows of its hours
// in each salt bucket with bounded calls, decodes a bounded batch of rows at
// a time and yields one series per row (a series-hour): memory does not grow
// with the table.
package opentsdb
