package remote

import (
	"context"
	"testing"

	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
	"github.com/prom-hbase/prom-hbase/table/testdb"
)

func openPebbleStore(tb testing.TB) *store.Store {
	tb.Helper()
	db, err := pebbletable.Open(tb.TempDir(), pebbletable.Options{SweepInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return openStore(tb, db, "")
}

func openStore(tb testing.TB, db table.DB, prefix string) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), db, store.Config{TablePrefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// TestPrometheusClientsPebble runs the client round trip on the real store
// over the embedded backend.
func TestPrometheusClientsPebble(t *testing.T) {
	testPrometheusClients(t, openPebbleStore(t))
}

// openHBaseStore opens the real store on the test HBase, in tables of a
// fresh prefix (the tables outlive the test).
func openHBaseStore(tb testing.TB) *store.Store {
	tb.Helper()
	db, prefix := testdb.HBase(tb, "remote_test")
	return openStore(tb, db, prefix)
}

// TestPrometheusClientsHBase runs it on the real store over HBase.
func TestPrometheusClientsHBase(t *testing.T) {
	testPrometheusClients(t, openHBaseStore(t))
}

// TestHistogramRoundTripPebble runs the histogram round trip (Prometheus's
// clients, RW 1.0 and 2.0 in, SAMPLES and streamed chunks out) on the real
// store over the embedded backend.
func TestHistogramRoundTripPebble(t *testing.T) {
	testHistogramRoundTrip(t, openPebbleStore(t))
}

// TestHistogramRoundTripHBase runs it on the real store over HBase.
func TestHistogramRoundTripHBase(t *testing.T) {
	testHistogramRoundTrip(t, openHBaseStore(t))
}

// TestWriteInvalidHistogramsPebble: malformed histograms are refused with
// nothing written on the real store too.
func TestWriteInvalidHistogramsPebble(t *testing.T) {
	testWriteInvalidHistograms(t, openPebbleStore(t))
}
