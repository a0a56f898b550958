package hbasetable

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tabletest"
)

func TestConformance(t *testing.T) {
	zk := hbasetest.ZK(t)
	var (
		once sync.Once
		db   *DB
		err  error
	)
	t.Cleanup(func() {
		if db != nil {
			db.Close()
		}
	})
	tabletest.Run(t, func(tb testing.TB) table.DB {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db, err = Open(ctx, Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot(), RPCTimeout: 20 * time.Second})
		})
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		return db
	})
}
