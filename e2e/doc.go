// Package e2e holds the end-to-end suite: a real HBase (started by the test
// command), the adapter binary built from this repository and run as a user
// runs it, and two real Prometheus servers. Prometheus A scrapes a
// deterministic target, keeps the data locally and remote-writes it to the
// adapter; Prometheus B keeps nothing and remote-reads from the adapter. The
// suite asks both the same PromQL questions and requires the same answers,
// before and after injected faults (HBase down, an adapter killed, two
// adapters racing on new series). Native histograms take the same path: A
// scrapes them (a client_golang target of integer, float and custom-bucket
// histograms, and A's own request durations) and sends them with both
// remote-write versions; generated histogram history is written directly.
// TestImportSnapshot starts a Prometheus on TSDB blocks of that history,
// imports a snapshot of it with `adapter import` (once cleanly, once killed
// and run again) and asks the same questions of it and of a Prometheus
// reading the imported tables. TestImportOpenTSDB has a real OpenTSDB 2.4.1
// load two table pairs, imports them with `adapter import opentsdb` and
// compares every series read back by remote read with OpenTSDB's
// /api/query, point for point.
//
// The package owns only test code. It must not import the adapter's packages:
// it talks to the adapter over HTTP exactly as Prometheus does, so it tests
// the product and not its internals.
package e2e
