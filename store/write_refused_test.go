package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
)

// TestWriteAfterRefusedWrite: once a Write has refused a series (its tag
// value needs a UID of a used-up space), the writer it used goes back to
// the pool; the next Write that reuses it, with nothing to refuse, must
// succeed. Its reset once left the refused marks a zero-length, non-nil
// slice, which that write indexed: a panic, which ended the adapter.
func TestWriteAfterRefusedWrite(t *testing.T) {
	db, prefix := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{MetricWidth: 3, TagKWidth: 3, TagVWidth: 1, SaltBuckets: 1}})
	now := time.Now().UnixMilli()
	var fill []SeriesIn
	for i := range 255 {
		fill = append(fill, SeriesIn{Labels: lbls("__name__", "up", "pod", fmt.Sprint("p", i)), Samples: []Sample{{T: now, V: 1}}})
	}
	if err := s.Write(ctx, fill[:254]); err != nil {
		t.Fatal(err)
	}
	// The 254 pods hold 254 of the 255 one-byte tag value UIDs ("up" is a
	// metric): of two new pods, one gets the last UID, one is refused.
	err := s.Write(ctx, []SeriesIn{
		{Labels: lbls("__name__", "up", "pod", "new-a"), Samples: []Sample{{T: now, V: 3}}},
		{Labels: lbls("__name__", "up", "pod", "new-b"), Samples: []Sample{{T: now, V: 4}}},
	})
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("err = %v, want a RefusedError", err)
	}

	// A plain write of known series, which needs no new UID.
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("write after a refused write panicked: %v", p)
			}
		}()
		err = s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "up", "pod", "p1"), Samples: []Sample{{T: now + 1, V: 2}}}})
	}()
	if err != nil {
		t.Fatalf("write after a refused write: %v (want nil: nothing refused)", err)
	}
}
