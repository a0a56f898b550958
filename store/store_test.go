package store

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/testdb"
)

// backends are Pebble and the test HBase, each a fresh DB (testdb).
var backends = testdb.Backends("store")

func openPebble(tb testing.TB) (table.DB, string) { return testdb.Pebble(tb) }
func openHBase(tb testing.TB) (table.DB, string)  { return testdb.HBase(tb, "store") }

func forEachBackend(t *testing.T, f func(t *testing.T, db table.DB, prefix string)) {
	testdb.ForEach(t, "store", f)
}

func openStore(tb testing.TB, db table.DB, cfg Config) *Store {
	tb.Helper()
	s, err := Open(context.Background(), db, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// lbls builds a series' labels, sorted by name, keeping empty values.
func lbls(kv ...string) []labels.Label {
	var out []labels.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, labels.Label{Name: kv[i], Value: kv[i+1]})
	}
	slices.SortFunc(out, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// collect drains a SeriesSet into a string that tests compare.
func collect(t testing.TB, ss SeriesSet) string {
	t.Helper()
	defer ss.Close()
	var b strings.Builder
	for ss.Next() {
		s := ss.At()
		b.WriteString(s.Labels.String())
		writePoints(&b, s.Samples, s.Histograms)
		b.WriteByte('\n')
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// collected is what collect gives for series that read back exactly as
// written: their label sets without empty values, in label order, each
// with its points.
func collected(series []SeriesIn) string {
	series = slices.Clone(series)
	slices.SortFunc(series, func(a, b SeriesIn) int { return labels.Compare(withoutEmpty(a.Labels), withoutEmpty(b.Labels)) })
	var b strings.Builder
	for _, s := range series {
		b.WriteString(withoutEmpty(s.Labels).String())
		writePoints(&b, s.Samples, s.Histograms)
		b.WriteByte('\n')
	}
	return b.String()
}

func mustMatcher(t testing.TB, typ labels.MatchType, name, value string) *labels.Matcher {
	m, err := labels.NewMatcher(typ, name, value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const hour = int64(time.Hour / time.Millisecond)

func TestWriteSelect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := 1_700_000_000_000 / hour * hour
		stale := math.Float64frombits(0x7ff0000000000002)
		err := s.Write(ctx, []SeriesIn{
			{Labels: lbls("__name__", "up", "job", "a", "zone", "eu"), Samples: []Sample{{T: base + 5, V: 1}, {T: base - 1, V: 2}, {T: base + hour, V: stale}}},
			{Labels: lbls("__name__", "up", "job", "b"), Samples: []Sample{{T: base, V: 3}}},
			{Labels: lbls("__name__", "other", "job", "nameless", "empty", ""), Samples: []Sample{{T: base, V: 4}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			ms         []*labels.Matcher
			start, end int64
			seriesOnly bool
			want       string
		}{
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}, base - hour, base + 2*hour, false,
				"{__name__=\"up\", job=\"a\", zone=\"eu\"} 1699999199999:4000000000000000 1699999200005:3ff0000000000000 1700002800000:7ff0000000000002\n" +
					"{__name__=\"up\", job=\"b\"} 1699999200000:4008000000000000\n"},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}, base, base + 5, false,
				"{__name__=\"up\", job=\"a\", zone=\"eu\"} 1699999200005:3ff0000000000000\n" +
					"{__name__=\"up\", job=\"b\"} 1699999200000:4008000000000000\n"},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "zone", "")}, base, base, false,
				"{__name__=\"other\", job=\"nameless\"} 1699999200000:4010000000000000\n" +
					"{__name__=\"up\", job=\"b\"} 1699999200000:4008000000000000\n"},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "job", "a|nameless"), mustMatcher(t, labels.MatchNotEqual, "__name__", "")}, base - hour, base + 2*hour, true,
				"{__name__=\"other\", job=\"nameless\"}\n{__name__=\"up\", job=\"a\", zone=\"eu\"}\n"},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "job", "unknown")}, base - hour, base + 2*hour, false, ""},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchNotRegexp, "job", "a|b")}, base - hour, base + 2*hour, false,
				"{__name__=\"other\", job=\"nameless\"} 1699999200000:4010000000000000\n"},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}, base + 6, base + hour - 1, false, ""},
			{[]*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}, base + 6, base + hour - 1, true,
				"{__name__=\"up\", job=\"a\", zone=\"eu\"}\n{__name__=\"up\", job=\"b\"}\n"},
		} {
			got := collect(t, s.Select(ctx, Query{Start: c.start, End: c.end, Matchers: c.ms, SeriesOnly: c.seriesOnly}))
			if got != c.want {
				t.Errorf("%v [%d, %d] series-only %v:\ngot\n%s\nwant\n%s", c.ms, c.start, c.end, c.seriesOnly, got, c.want)
			}
		}
	})
}

func TestInvalidInput(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{MaxLabels: 3, MaxLabelValueLength: 10})
	good := SeriesIn{Labels: lbls("__name__", "good"), Samples: []Sample{{T: 1000, V: 1}}}
	for _, c := range []struct {
		ls      []labels.Label
		t       int64
		rule    string
		inError string
	}{
		{[]labels.Label{{Name: "", Value: "x"}}, 1000, "label with an empty name", `"x"`},
		{lbls("a", "1"), 1000, "no __name__", `"a"="1"`},
		{[]labels.Label{{Name: "b", Value: "1"}, {Name: "a", Value: "2"}}, 1000, "not sorted", `{"b"="1", "a"="2"}`},
		{[]labels.Label{{Name: "a", Value: "1"}, {Name: "a", Value: "2"}}, 1000, "duplicate label name", `"a"="2"`},
		{[]labels.Label{{Name: "a\xff", Value: "1"}}, 1000, "not valid UTF-8", `"a\xff"`},
		{[]labels.Label{{Name: "a", Value: "\xc3"}}, 1000, "not valid UTF-8", `"a"`},
		{[]labels.Label{{Name: "a", Value: "01234567890"}}, 1000, "more than the limit of 10", `"a"`},
		{lbls("a", "1", "b", "2", "c", "3", "d", "4"), 1000, "4 labels, more than the limit of 3", `"d"="4"`},
		{lbls("a", "\x00x"), 1000, "reserved", `"a"`},
		{lbls("__name__", "m", "a", "1"), -1, "timestamp -1 outside", `"a"="1"`},
		{lbls("__name__", "m", "a", "1"), 1 << 62, "outside", `"a"="1"`},
	} {
		err := s.Write(ctx, []SeriesIn{good, {Labels: c.ls, Samples: []Sample{{T: c.t, V: 1}}}})
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), c.rule) || !strings.Contains(err.Error(), c.inError) {
			t.Errorf("labels %q at %d: err = %v, want ErrInvalidInput naming %q and %q", c.ls, c.t, err, c.inError, c.rule)
		}
	}
	// Nothing of the refused batches was written, the good series included.
	got := collect(t, s.Select(ctx, Query{Start: 0, End: 1 << 40, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchRegexp, "__name__", ".*")}, SeriesOnly: true}))
	if got != "" {
		t.Errorf("refused batches left series behind:\n%s", got)
	}
	// ... and no UID was assigned for them.
	names, _, err := s.Resolver().List(ctx, 2)
	if err != nil || len(names) != 1 {
		t.Errorf("tag values listed after refused writes: %q, %v", names, err)
	}
}

func TestRestartAndSchema(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix}
		s := openStore(t, db, cfg)
		if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "m", "k", "v"), Samples: []Sample{{T: 7200_000, V: 42}}}}); err != nil {
			t.Fatal(err)
		}
		s.Close()

		s2 := openStore(t, db, cfg)
		got := collect(t, s2.Select(ctx, Query{Start: 0, End: 1e7, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "k", "v")}}))
		if want := "{__name__=\"m\", k=\"v\"} 7200000:4045000000000000\n"; got != want {
			t.Errorf("after reopening: got %q, want %q", got, want)
		}

		for _, c := range []struct {
			mod  func(*Config)
			want string
		}{
			{func(c *Config) { c.Layout.TagVWidth = 3 }, "--uid.width.tagv is 3 but the tables were created with 4"},
			{func(c *Config) { c.Layout.MetricWidth = 4 }, "--uid.width.metric is 4 but the tables were created with 3"},
			{func(c *Config) { c.Layout.TagKWidth = 2 }, "--uid.width.tagk is 2 but the tables were created with 3"},
			{func(c *Config) { c.Layout.SaltBuckets = 1 }, "--salt.buckets is 1 but the tables were created with 16"},
		} {
			bad := cfg
			c.mod(&bad)
			_, err := Open(ctx, db, bad)
			var se *SchemaError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("open with %+v: err = %v, want %q", bad.Layout, err, c.want)
			}
		}
	})
}

func TestWriteMetadata(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{})
	if err := s.WriteMetadata(ctx, []Metadata{{MetricFamilyName: "up", Type: "gauge", Help: "Up.", Unit: ""}}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.uid.Get(ctx, FamilyMeta, [][]byte{[]byte("up")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rows[0].Cells {
		got = append(got, string(c.Qualifier)+"="+string(c.Value))
	}
	if strings.Join(got, ",") != "help=Up.,type=gauge,unit=" {
		t.Errorf("metadata cells = %q", got)
	}
	if err := s.WriteMetadata(ctx, []Metadata{{MetricFamilyName: ""}}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("empty family name: err = %v", err)
	}
}

// TestWriteSeriesID: a write reports the series IDs it is asked for, and a
// write that passes them back stores the samples in the same series as its
// labels would, without checking them again; what a series carries is
// still checked, and errors still name it by its labels.
func TestWriteSeriesID(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := 1_700_000_000_000 / hour * hour
		a := lbls("__name__", "up", "job", "a", "empty", "")
		batch := []SeriesIn{
			{Labels: a, Samples: []Sample{{T: base, V: 1}}, ReportID: true},
			{Labels: lbls("__name__", "up", "job", "b"), Samples: []Sample{{T: base, V: 2}}},
		}
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if batch[0].ID == nil || batch[1].ID != nil {
			t.Fatalf("IDs after the write: %x (asked for), %x (not asked for)", batch[0].ID, batch[1].ID)
		}
		id := batch[0].ID
		again := []SeriesIn{{Labels: a, ID: id, Samples: []Sample{{T: base + hour, V: 3}}, ReportID: true}}
		if err := s.Write(ctx, again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again[0].ID, id) {
			t.Errorf("a series written with its ID reports %x, want it unchanged (%x)", again[0].ID, id)
		}
		// With an ID the labels are the caller's word: unsorted ones, which a
		// write without the ID refuses, pass, and the samples go to id's series.
		unsorted := []labels.Label{{Name: "job", Value: "a"}, {Name: "__name__", Value: "up"}}
		if err := s.Write(ctx, []SeriesIn{{Labels: unsorted, Samples: []Sample{{T: base, V: 9}}}}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("unsorted labels without an ID: %v", err)
		}
		if err := s.Write(ctx, []SeriesIn{{Labels: unsorted, ID: id, Samples: []Sample{{T: base + 2*hour, V: 4}}}}); err != nil {
			t.Errorf("unsorted labels with an ID: %v", err)
		}
		for _, bad := range []SeriesIn{
			{Labels: a, ID: id},
			{Labels: a, ID: id, Samples: []Sample{{T: 1 << 50, V: 5}}},
		} {
			err := s.Write(ctx, []SeriesIn{bad})
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), `"job"="a"`) {
				t.Errorf("%+v: %v, want an invalid-input error naming the series", bad, err)
			}
		}
		got := collect(t, s.Select(ctx, Query{Start: base, End: base + 3*hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}}))
		want := "{__name__=\"up\", job=\"a\"} 1699999200000:3ff0000000000000 1700002800000:4008000000000000 1700006400000:4010000000000000\n" +
			"{__name__=\"up\", job=\"b\"} 1699999200000:4000000000000000\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
}
