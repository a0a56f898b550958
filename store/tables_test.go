package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestUIDExhaustionRefusesOnlyItsSeries: a series that needs a UID the
// space no longer has is refused, named with its label and the width; the
// rest of the batch is written and reads back.
func TestUIDExhaustionRefusesOnlyItsSeries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		// 1-byte tag values: 255 of them.
		s := openStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 1, SaltBuckets: 2}})
		now := time.Now().UnixMilli()
		var fill []SeriesIn
		for i := range 254 {
			fill = append(fill, SeriesIn{Labels: lbls("__name__", "up", "pod", fmt.Sprint("p", i)), Samples: []Sample{{T: now, V: 1}}})
		}
		if err := s.Write(ctx, fill); err != nil {
			t.Fatal(err)
		}
		// "up" is no tag value; 254 pods are. One value is left for three
		// new series: the first new value gets it, the other two are
		// refused, and the known series is written.
		batch := []SeriesIn{
			{Labels: lbls("__name__", "up", "pod", "p1"), Samples: []Sample{{T: now + 1, V: 2}}},
			{Labels: lbls("__name__", "up", "pod", "new-a"), Samples: []Sample{{T: now, V: 3}}},
			{Labels: lbls("__name__", "up", "pod", "new-b"), Samples: []Sample{{T: now, V: 4}, {T: now + 1, V: 5}}},
			{Labels: lbls("__name__", "up", "pod", "new-c"), Samples: []Sample{{T: now, V: 6}}},
		}
		err := s.Write(ctx, batch)
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Fatalf("err = %v, want a RefusedError", err)
		}
		if !errors.Is(err, ErrInvalidInput) || !errors.Is(err, labels2uid.ErrExhausted) {
			t.Errorf("err = %v: want ErrInvalidInput and ErrExhausted", err)
		}
		if refused.Series != 2 || refused.Samples != 2 && refused.Samples != 3 {
			t.Errorf("refused %d series, %d samples; want 2 series", refused.Series, refused.Samples)
		}
		for _, want := range []string{`label "pod"`, "all 1-byte tagv UIDs are assigned"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %q, want it to say %q", err, want)
			}
		}
		got := collect(t, s.Select(ctx, Query{Start: now - 1, End: now + 1, Matchers: []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchRegexp, "pod", "p1|new-.*"),
			labels.MustNewMatcher(labels.MatchEqual, "__name__", "up"),
		}}))
		// Exactly one of the new series was written, with p1's new sample.
		if strings.Count(got, "new-") != 1 || !strings.Contains(got, "p1") {
			t.Errorf("read back:\n%s\nwant p1 and one new series", got)
		}
	})
}

// TestOpenAltersExistingTables: tables created by an earlier version (UID
// families with NEW_VERSION_BEHAVIOR, no block encoding) and a data table
// with another retention and FAST_DIFF blocks without compression (before
// --hbase.data-compression) are brought to this version's settings at
// start, and nothing stored changes.
func TestOpenAltersExistingTables(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix, Retention: 30 * 24 * time.Hour, DataCompression: "none", ChunkCompression: "none", RawMemstore: "none"}
		cfg.setDefaults()
		old := uidTableSpec(cfg)
		for i := range old.Families {
			old.Families[i] = table.FamilySpec{Name: old.Families[i].Name, BloomFilter: "ROW", NewVersionBehavior: true}
		}
		if err := db.CreateTable(ctx, old); err != nil {
			t.Fatal(err)
		}
		s := openStore(t, db, cfg)
		now := time.Now().UnixMilli()
		in := []SeriesIn{{Labels: lbls("__name__", "m", "a", "b"), Samples: []Sample{{T: now, V: 1}}}}
		if err := s.Write(ctx, in); err != nil {
			t.Fatal(err)
		}
		if data, err := db.Describe(ctx, prefix+DataTableSuffix); err != nil {
			t.Fatal(err)
		} else {
			for _, f := range dataFamilies(t, data) {
				if f.DataBlockEncoding != "FAST_DIFF" || orDefault(f.Compression, "NONE") != "NONE" {
					t.Fatalf("data family %s created without compression has %s blocks compressed %q, want FAST_DIFF, NONE", f.Name, f.DataBlockEncoding, f.Compression)
				}
				if f.Name == FamilyRaw && f.InMemoryCompaction != "NONE" {
					t.Fatalf("raw family created with RawMemstore NONE has IN_MEMORY_COMPACTION %q", f.InMemoryCompaction)
				}
			}
		}
		var logs bytes.Buffer
		cfg.Retention = 90 * 24 * time.Hour
		cfg.DataCompression, cfg.ChunkCompression, cfg.RawMemstore = "", "", "" // the defaults
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s2 := openStore(t, db, cfg)
		have, err := db.Describe(ctx, prefix+UIDTableSuffix)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range have.Families {
			if f.NewVersionBehavior {
				t.Errorf("UID family %s still has NEW_VERSION_BEHAVIOR", f.Name)
			}
		}
		data, err := db.Describe(ctx, prefix+DataTableSuffix)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range dataFamilies(t, data) {
			if f.TTL != cfg.Retention {
				t.Errorf("data family %s TTL = %v after a restart with retention %v", f.Name, f.TTL, cfg.Retention)
			}
			codec := map[string]string{FamilyData: DefaultChunkCompression, FamilyRaw: DefaultDataCompression, FamilyFence: DefaultChunkCompression}[f.Name]
			if f.DataBlockEncoding != "ROW_INDEX_V1" || f.Compression != codec {
				t.Errorf("data family %s after a start with the default compression: %s blocks compressed %q, want ROW_INDEX_V1, %s",
					f.Name, f.DataBlockEncoding, f.Compression, codec)
			}
			// The chunk and fence families keep the server's default; the raw
			// one takes the default of this version.
			if want := map[string]string{FamilyData: "", FamilyRaw: DefaultRawMemstore, FamilyFence: ""}[f.Name]; f.InMemoryCompaction != want {
				t.Errorf("data family %s after a start with the defaults: IN_MEMORY_COMPACTION %q, want %q", f.Name, f.InMemoryCompaction, want)
			}
		}
		for _, want := range []string{"TTL 720h0m0s -> 2160h0m0s", "DATA_BLOCK_ENCODING FAST_DIFF -> ROW_INDEX_V1",
			"family=t changes=\"TTL 720h0m0s -> 2160h0m0s, DATA_BLOCK_ENCODING FAST_DIFF -> ROW_INDEX_V1, COMPRESSION NONE -> GZ\"",
			"family=r changes=\"TTL 720h0m0s -> 2160h0m0s, DATA_BLOCK_ENCODING FAST_DIFF -> ROW_INDEX_V1, COMPRESSION NONE -> SNAPPY, IN_MEMORY_COMPACTION NONE -> BASIC\""} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("no log line says %q:\n%s", want, logs.String())
			}
		}
		got := collect(t, s2.Select(ctx, Query{Start: now, End: now, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}))
		if !strings.Contains(got, `a="b"`) {
			t.Errorf("after the alter, read back %q", got)
		}
		// A third start with the same settings changes nothing.
		logs.Reset()
		openStore(t, db, cfg)
		if strings.Contains(logs.String(), "altered") {
			t.Errorf("a start with unchanged settings altered a table:\n%s", logs.String())
		}
	})
}

// dataFamilies returns the data table's two families as described.
func dataFamilies(t *testing.T, data table.TableSpec) []table.FamilySpec {
	t.Helper()
	var out []table.FamilySpec
	for _, name := range []string{FamilyData, FamilyRaw, FamilyFence} {
		f, ok := findFamily(data, name)
		if !ok {
			t.Fatalf("data table has no family %s: %+v", name, data.Families)
		}
		out = append(out, f)
	}
	return out
}

// TestOpenAddsRawFamily opens a data table of the version before FamilyRaw
// (one family, raw cells in it under 'm' marks): the family is added, the
// old raw cells are read, and the compactor folds them.
func TestOpenAddsRawFamily(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix}
		cfg.setDefaults()
		old := dataTableSpec(cfg)
		old.Families = old.Families[:1]
		if old.Families[0].Name != FamilyData {
			t.Fatalf("first data family is %s", old.Families[0].Name)
		}
		if err := db.CreateTable(ctx, old); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		s, clock := clockedStore(t, db, cfg)
		data, err := db.Describe(ctx, prefix+DataTableSuffix)
		if err != nil {
			t.Fatal(err)
		}
		dataFamilies(t, data)
		if !strings.Contains(logs.String(), "family added") {
			t.Errorf("no log line tells of the added family:\n%s", logs.String())
		}
		// Cells as the earlier version wrote them: raw cells in FamilyData
		// under an 'm' mark, two hours back (closed).
		start := (time.Now().Add(-3*time.Hour).UnixMilli())/hour*hour + 1000
		ls := lbls("__name__", "legacy", "job", "j")
		var samples []Sample
		for i := range 100 {
			samples = append(samples, Sample{T: start + int64(i)*15000, V: float64(i)})
		}
		if err := s.Write(ctx, []SeriesIn{{Labels: ls, Samples: samples}}); err != nil {
			t.Fatal(err)
		}
		moveToLegacy(t, s)
		q := Query{Start: start, End: start + hour, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "legacy")}}
		want := collect(t, s.Select(ctx, q))
		if exp := collected([]SeriesIn{{Labels: ls, Samples: samples}}); want != exp {
			t.Fatalf("legacy raw cells read back as\n%s\nwant\n%s", want, exp)
		}
		clock.advance(30 * time.Minute) // past the quiet period
		c := clockedCompactor(t, s, clock)
		if _, err := c.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		assertCompacted(t, s)
		if got := collect(t, s.Select(ctx, q)); got != want {
			t.Errorf("after the compaction of legacy raw cells read\n%s\nwant\n%s", got, want)
		}
		// A second start adds nothing.
		logs.Reset()
		openStore(t, db, cfg)
		if strings.Contains(logs.String(), "family added") {
			t.Errorf("a second start added a family:\n%s", logs.String())
		}
	})
}

// moveToLegacy rewrites the store's raw cells and marks as the version
// before FamilyRaw wrote them: raw cells in FamilyData, 'm' marks.
func moveToLegacy(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	rows, err := scanPage(ctx, s.data, table.ScanOptions{Family: FamilyRaw}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var put, del []table.Cell
	for _, r := range rows {
		for _, c := range r.Cells {
			del = append(del, c)
			c.Family = FamilyData
			put = append(put, c)
		}
	}
	marks, err := scanPage(ctx, s.todo.t, table.ScanOptions{Family: familyCompact}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var putMarks, delMarks []table.Cell
	for _, r := range marks {
		for _, c := range r.Cells {
			if c.Qualifier[0] == markPrefix {
				delMarks = append(delMarks, c)
				c.Qualifier = append([]byte{legacyMarkPrefix}, c.Qualifier[1:]...)
				putMarks = append(putMarks, c)
			}
		}
	}
	if len(put) == 0 || len(putMarks) == 0 {
		t.Fatalf("%d raw cells and %d marks to move", len(put), len(putMarks))
	}
	for _, step := range []error{s.data.Put(ctx, put), s.data.Delete(ctx, del), s.todo.t.Put(ctx, putMarks), s.todo.t.Delete(ctx, delMarks)} {
		if step != nil {
			t.Fatal(step)
		}
	}
}

func TestDataSplitKeys(t *testing.T) {
	for _, c := range []struct {
		buckets, regions int
		want             []byte
	}{
		{16, 0, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{16, 16, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{16, 99, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{16, 1, nil},
		{16, 4, []byte{4, 8, 12}},
		{16, 3, []byte{5, 10}},
		{1, 0, nil},
		{1, 5, nil},
		{256, 2, []byte{128}},
	} {
		var got []byte
		for _, k := range dataSplitKeys(c.buckets, c.regions) {
			if len(k) != 1 {
				t.Fatalf("%d buckets, %d regions: split key %x is not one bucket byte", c.buckets, c.regions, k)
			}
			got = append(got, k[0])
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%d buckets, %d regions: split at %v, want %v", c.buckets, c.regions, got, c.want)
		}
	}
}

// TestOpenRefusesUnknownFloatChunks: a Config.FloatChunks the store does
// not know is refused at Open, naming what it takes, before a table is
// created.
func TestOpenRefusesUnknownFloatChunks(t *testing.T) {
	db, prefix := openPebble(t)
	_, err := Open(context.Background(), db, Config{TablePrefix: prefix, FloatChunks: "gorilla"})
	if err == nil || !strings.Contains(err.Error(), `"gorilla"`) || !strings.Contains(err.Error(), FloatChunksXOR) {
		t.Fatalf("Open with FloatChunks gorilla: %v", err)
	}
	if _, err := db.Table(context.Background(), prefix+UIDTableSuffix); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("UID table after the refusal: %v, want ErrTableNotFound", err)
	}
}

// TestOpenRefusesUnknownRawMemstore: only BASIC and NONE are taken (EAGER
// and ADAPTIVE drop versions in memory), case aside, before a table is
// created.
func TestOpenRefusesUnknownRawMemstore(t *testing.T) {
	db, prefix := openPebble(t)
	_, err := Open(context.Background(), db, Config{TablePrefix: prefix, RawMemstore: "eager"})
	if err == nil || !strings.Contains(err.Error(), `"EAGER"`) || !strings.Contains(err.Error(), "BASIC or NONE") {
		t.Fatalf("Open with RawMemstore eager: %v", err)
	}
	if _, err := db.Table(context.Background(), prefix+UIDTableSuffix); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("UID table after the refusal: %v, want ErrTableNotFound", err)
	}
	s, err := Open(context.Background(), db, Config{TablePrefix: prefix, RawMemstore: "basic"})
	if err != nil {
		t.Fatalf("Open with RawMemstore basic: %v", err)
	}
	s.Close()
}

// TestOpenRefusesLabelLimitAboveRowKey: a label length limit above what a
// UID table row key holds would let through strings HBase refuses on every
// retry, so Open refuses it, before creating anything.
func TestOpenRefusesLabelLimitAboveRowKey(t *testing.T) {
	db, prefix := openPebble(t)
	_, err := Open(context.Background(), db, Config{TablePrefix: prefix, MaxLabelValueLength: 100_000})
	if err == nil || !strings.Contains(err.Error(), "label value length limit of 100000 bytes is above the 32000") {
		t.Fatalf("Open with a 100,000-byte value limit: %v", err)
	}
	if _, err := db.Table(context.Background(), prefix+UIDTableSuffix); !errors.Is(err, table.ErrTableNotFound) {
		t.Fatalf("UID table after the refusal: %v, want ErrTableNotFound", err)
	}
	if _, err := Open(context.Background(), db, Config{TablePrefix: prefix, MaxLabelNameLength: 32_000, MaxLabelValueLength: 32_000}); err != nil {
		t.Fatalf("Open at the bound: %v", err)
	}
}

// TestFamilyDiffMemstore: an in-memory compaction differs by its policy,
// whatever the case, and by a backend's remark on how it is set up.
func TestFamilyDiffMemstore(t *testing.T) {
	for _, c := range []struct {
		have, want string
		diff       string // "": none
	}{
		{"", "", ""},
		{"BASIC", "", ""}, // the spec leaves it as found
		{"basic", "BASIC", ""},
		{"", "NONE", ""},
		{"NONE", "BASIC", "IN_MEMORY_COMPACTION NONE -> BASIC"},
		{"BASIC (pipeline segments the region server's)", "BASIC", "IN_MEMORY_COMPACTION BASIC (pipeline segments the region server's) -> BASIC"},
	} {
		d := familyDiff(table.FamilySpec{InMemoryCompaction: c.have}, table.FamilySpec{InMemoryCompaction: c.want})
		if got := strings.Join(d, ", "); got != c.diff {
			t.Errorf("have %q, want %q: diff %q, want %q", c.have, c.want, got, c.diff)
		}
	}
}

// adminDown is a DB whose administration does not answer, as HBase's while
// its master is down: Describe fails at once, or, with block, once its
// context ends (the HBase client's retries). Reads and writes still work.
type adminDown struct {
	table.DB
	block bool
}

func (a adminDown) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	if a.block {
		<-ctx.Done()
		return table.TableSpec{}, fmt.Errorf("describe %s: %w", name, ctx.Err())
	}
	return table.TableSpec{}, fmt.Errorf("describe %s: the master does not answer", name)
}

// TestOpenWithoutDescribe: a start that cannot describe the tables (HBase:
// the master down) starts on the schema row's record of their families,
// once a start with the same settings brought them to these settings, and
// reads and writes; before that record, or with other settings, it fails.
func TestOpenWithoutDescribe(t *testing.T) {
	defer func(d time.Duration) { describeWait = d }(describeWait)
	describeWait = 200 * time.Millisecond
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix}
		if _, err := Open(ctx, adminDown{DB: db}, cfg); err == nil || !strings.Contains(err.Error(), "master does not answer") {
			t.Fatalf("first start without describe: err = %v, want the describe error", err)
		}
		s := openStore(t, db, cfg)
		now := time.Now().UnixMilli()
		if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "m", "a", "b"), Samples: []Sample{{T: now, V: 1}}}}); err != nil {
			t.Fatal(err)
		}

		var logs bytes.Buffer
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s2, err := Open(octx, adminDown{DB: db, block: true}, cfg)
		if err != nil {
			t.Fatalf("start with the families recorded, without describe: %v", err)
		}
		if got := strings.Count(logs.String(), "could not be described"); got != 2 {
			t.Errorf("%d warnings of families not checked, want 2 (UID and data tables):\n%s", got, logs.String())
		}
		if err := s2.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "m", "a", "c"), Samples: []Sample{{T: now, V: 2}}}}); err != nil {
			t.Fatal(err)
		}
		got := collect(t, s2.Select(ctx, Query{Start: now, End: now, Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")}}))
		if !strings.Contains(got, `a="b"`) || !strings.Contains(got, `a="c"`) {
			t.Errorf("read back after a start without describe:\n%s\nwant both series", got)
		}

		cfg.Retention = 400 * 24 * time.Hour // another TTL: not what is recorded
		if _, err := Open(ctx, adminDown{DB: db}, cfg); err == nil || !strings.Contains(err.Error(), "master does not answer") {
			t.Errorf("start with other settings without describe: err = %v, want the describe error", err)
		}
	})
}
