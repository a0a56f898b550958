package rowkey

import (
	"github.com/prom-hbase/prom-hbase/uid"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		l    Layout
		want string // substring of the error; empty: valid
	}{
		{DefaultLayout, ""},
		{Layout{SaltBuckets: 1, MetricWidth: 1, TagKWidth: 1, TagVWidth: 1}, ""},
		{Layout{SaltBuckets: 256, MetricWidth: 8, TagKWidth: 8, TagVWidth: 8}, ""},
		{Layout{SaltBuckets: 257, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}, "salt buckets 257"},
		{Layout{SaltBuckets: -1, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}, "salt buckets -1"},
		{Layout{MetricWidth: 0, TagKWidth: 3, TagVWidth: 4}, "metric UID width 0"},
		{Layout{MetricWidth: 3, TagKWidth: 9, TagVWidth: 4}, "tagk UID width 9"},
		{Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 0}, "tagv UID width 0"},
		{Layout{}, "metric UID width 0"},
	} {
		err := tc.l.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tc.l, err)
			}
			if !tc.l.valid() {
				t.Errorf("%+v: valid() disagrees with Validate", tc.l)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.l, err, tc.want)
		}
		if tc.l.valid() {
			t.Errorf("%+v: valid() disagrees with Validate", tc.l)
		}
	}
}

func TestSaltWidth(t *testing.T) {
	for buckets, want := range map[int]int{0: 0, 1: 0, 2: 1, 20: 1, 256: 1} {
		if got := (Layout{SaltBuckets: buckets}).SaltWidth(); got != want {
			t.Errorf("SaltWidth with %d buckets = %d, want %d", buckets, got, want)
		}
	}
}

func TestCheckUID(t *testing.T) {
	for w := 1; w <= 8; w++ {
		l := Layout{MetricWidth: w, TagKWidth: w, TagVWidth: w}
		max := uint64(1)<<(8*uint(w)) - 1
		if w == 8 {
			max = ^uint64(0)
		}
		for _, kind := range []uid.Kind{uid.Metric, uid.TagK, uid.TagV} {
			if got := l.MaxUID(kind); got != max {
				t.Errorf("width %d %s: MaxUID %d, want %d", w, kind, got, max)
			}
			if err := l.CheckUID(kind, max); err != nil {
				t.Errorf("width %d %s: max UID rejected: %v", w, kind, err)
			}
			if w < 8 {
				err := l.CheckUID(kind, max+1)
				if err == nil {
					t.Errorf("width %d %s: UID %d accepted", w, kind, max+1)
				} else if !strings.Contains(err.Error(), kind.String()) {
					t.Errorf("error %q does not name the kind %s", err, kind)
				}
			}
		}
	}
	if err := DefaultLayout.CheckUID(uid.Kind(7), 1); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestCheckSeries(t *testing.T) {
	l := Layout{MetricWidth: 1, TagKWidth: 1, TagVWidth: 2}
	for _, tc := range []struct {
		metric uint64
		tags   []TagPair
		ok     bool
	}{
		{1, nil, true},
		{255, []TagPair{{1, 65535}, {2, 0}}, true},
		{256, nil, false},
		{1, []TagPair{{256, 1}}, false},
		{1, []TagPair{{1, 65536}}, false},
		{1, []TagPair{{2, 1}, {1, 1}}, false},
		{1, []TagPair{{1, 1}, {1, 2}}, false},
	} {
		err := l.CheckSeries(tc.metric, tc.tags)
		if (err == nil) != tc.ok {
			t.Errorf("CheckSeries(%d, %v) = %v, want ok=%v", tc.metric, tc.tags, err, tc.ok)
		}
	}
}
