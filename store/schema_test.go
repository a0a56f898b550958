package store

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// setLayoutVersion rewrites the schema row's layout version, as tables
// written by another adapter version would hold it.
func setLayoutVersion(t *testing.T, uid table.Table, v int) {
	t.Helper()
	if err := uid.Put(context.Background(), []table.Cell{{
		Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(layoutSetting),
		Timestamp: table.LatestTimestamp, Value: []byte(strconv.Itoa(v)),
	}}); err != nil {
		t.Fatal(err)
	}
}

func layoutVersionOf(t *testing.T, uid table.Table) string {
	t.Helper()
	got, err := readSchema(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	return string(got[layoutSetting])
}

// TestLayoutUpgrade: tables of every older cell layout this one reads are
// upgraded in place on open; an adapter of the older layout then refuses
// them, and one of this layout refuses tables of a newer one.
func TestLayoutUpgrade(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix}
		s := openStore(t, db, cfg)
		uid := s.uid
		if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion) {
			t.Fatalf("new tables recorded layout %s", v)
		}
		if cellcodec.OldestReadableLayoutVersion >= cellcodec.LayoutVersion {
			t.Fatalf("no older layout to upgrade from")
		}
		var se *SchemaError
		for from := cellcodec.OldestReadableLayoutVersion; from < cellcodec.LayoutVersion; from++ {
			setLayoutVersion(t, uid, from)
			openStore(t, db, cfg)
			if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion) {
				t.Fatalf("after opening tables of layout %d: recorded %s", from, v)
			}
			// An adapter of the older layout now refuses the tables.
			old := schemaOf(s.layout, s.layout)
			old[len(old)-1].value = from
			_, err := checkSchema(ctx, uid, old)
			if !errors.As(err, &se) || se.Setting != layoutSetting || se.Have != from || se.Table != cellcodec.LayoutVersion {
				t.Fatalf("adapter of layout %d on upgraded tables: %v", from, err)
			}
		}
		// Tables of a newer layout are refused, not downgraded.
		setLayoutVersion(t, uid, cellcodec.LayoutVersion+1)
		if _, err := Open(ctx, db, cfg); !errors.As(err, &se) || se.Table != cellcodec.LayoutVersion+1 {
			t.Fatalf("open tables of a newer layout: %v", err)
		}
		if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion+1) {
			t.Fatalf("newer layout rewritten to %s", v)
		}
	})
}

// TestLayoutAdopted: a store opened without a layout setting takes the one
// the tables were created with (any adapter's, here a layout of no default
// value), one opened with it given checks it, and new tables take
// DefaultLayout where Layout leaves a setting out.
func TestLayoutAdopted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		created := rowkey.Layout{MetricWidth: 2, TagKWidth: 4, TagVWidth: 3, SaltBuckets: 5}
		s := openStore(t, db, Config{TablePrefix: prefix, Layout: created, DefaultLayout: rowkey.Layout{SaltBuckets: 1}})
		if s.Layout() != created {
			t.Fatalf("tables created with %+v, store uses %+v", created, s.Layout())
		}
		in := []SeriesIn{{Labels: lbls("__name__", "m", "k", "v"), Samples: []Sample{{T: 7200_000, V: 42}}}}
		if err := s.Write(ctx, in); err != nil {
			t.Fatal(err)
		}
		s.Close()

		// Nothing given, another default, one setting given as recorded:
		// each opens the tables as created and reads what was written.
		for _, cfg := range []Config{
			{TablePrefix: prefix},
			{TablePrefix: prefix, DefaultLayout: rowkey.Layout{MetricWidth: 3, SaltBuckets: 16}},
			{TablePrefix: prefix, Layout: rowkey.Layout{SaltBuckets: 5}},
		} {
			s := openStore(t, db, cfg)
			if s.Layout() != created {
				t.Errorf("open with %+v: layout %+v, want the tables' %+v", cfg.Layout, s.Layout(), created)
			}
			got := collect(t, s.Select(ctx, Query{Start: 0, End: 1e7, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "k", "v")}}))
			if want := "{__name__=\"m\", k=\"v\"} 7200000:4045000000000000\n"; got != want {
				t.Errorf("open with %+v: got %q, want %q", cfg.Layout, got, want)
			}
			s.Close()
		}
		// A setting given that differs is refused, naming the flag.
		var se *SchemaError
		if _, err := Open(ctx, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{TagKWidth: 3}}); !errors.As(err, &se) || se.Setting != "uid.width.tagk" || se.Have != 3 || se.Table != 4 {
			t.Errorf("open with --uid.width.tagk=3 on tables of 4: %v", err)
		}

		// New tables: the given settings, then DefaultLayout's, then the
		// defaults.
		fresh := openStore(t, db, Config{TablePrefix: prefix + "fresh_", Layout: rowkey.Layout{TagVWidth: 5}, DefaultLayout: rowkey.Layout{SaltBuckets: 1}})
		want := rowkey.Layout{MetricWidth: rowkey.DefaultLayout.MetricWidth, TagKWidth: rowkey.DefaultLayout.TagKWidth, TagVWidth: 5, SaltBuckets: 1}
		if fresh.Layout() != want {
			t.Errorf("new tables: layout %+v, want %+v", fresh.Layout(), want)
		}
		if l, err := recordedLayout(ctx, fresh.uid); err != nil || l != want {
			t.Errorf("new tables recorded %+v (%v), want %+v", l, err, want)
		}
	})
}
