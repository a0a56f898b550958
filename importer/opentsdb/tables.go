package opentsdb

import (
	"context"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// tables is what the source asks of HBase: scans and batched gets.
// *hbase.Client serves it (clientTables); tests use an in-memory table.
type tables interface {
	scan(ctx context.Context, table string, s *hrpc.Scan, opts hbase.ScanOptions) rowScanner
	getBatch(ctx context.Context, table string, gets []*hrpc.Get) ([][]hrpc.Cell, error)
}

// rowScanner is hbase.Scanner's iteration: a row is valid until the next
// call to Next.
type rowScanner interface {
	Next() bool
	At() hbase.Row
	Err() error
	Close() error
}

type clientTables struct{ c *hbase.Client }

func (t clientTables) scan(ctx context.Context, table string, s *hrpc.Scan, opts hbase.ScanOptions) rowScanner {
	return t.c.Scan(ctx, table, s, opts)
}

func (t clientTables) getBatch(ctx context.Context, table string, gets []*hrpc.Get) ([][]hrpc.Cell, error) {
	return t.c.GetBatch(ctx, table, gets)
}

// Families and qualifiers of OpenTSDB's tables.
var (
	familyData  = []byte("t")
	familyName  = []byte("name")
	familyID    = []byte("id")
	qualMetrics = "metrics"
	qualTagK    = "tagk"
	qualTagV    = "tagv"
)
