package main

import (
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tablefault"
)

// testingFlags are hidden flags for the end-to-end fault tests: never set
// in production.
type testingFlags struct {
	faultRate   float64
	faultTables string
	faultSeed   uint64
}

func addTestingFlags(app *kingpin.Application, t *testingFlags) {
	app.Flag("testing.table-fault-rate", "TESTING ONLY: fail this share of storage calls at random, half of them after they were applied (a lost reply).").
		Hidden().Default("0").Float64Var(&t.faultRate)
	app.Flag("testing.table-fault-tables", "TESTING ONLY: limit the faults to tables whose name ends with this.").
		Hidden().Default("").StringVar(&t.faultTables)
	app.Flag("testing.table-fault-seed", "TESTING ONLY: seed of the fault sequence.").
		Hidden().Default("1").Uint64Var(&t.faultSeed)
}

// wrap returns db ready for the faults the flags ask for, if any, and a
// function that turns them on: once the store is open, so that start-up
// itself does not fail.
func (t *testingFlags) wrap(db table.DB, logger *slog.Logger) (table.DB, func()) {
	if t.faultRate <= 0 {
		return db, func() {}
	}
	fdb := tablefault.Wrap(db, tablefault.Config{Seed: t.faultSeed, TableSuffix: t.faultTables})
	return fdb, func() {
		logger.Warn("TESTING: injecting storage faults", "rate", t.faultRate, "tables", t.faultTables)
		fdb.SetRate(t.faultRate)
	}
}
