package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// The resume state lives in a table of its own next to the store's,
// <prefix>prom-import, one row per unit done, rather than in a file: an
// import runs wherever an adapter runs (a container without a disk of its
// own, any member of a fleet), and the state belongs with the data it
// describes: new tables (another prefix) start from nothing, and dropping
// the tables drops the state. It goes through package table, so it works on
// HBase and on the embedded store alike.
const (
	StateTableSuffix = "prom-import"
	stateFamily      = "u"
)

// The cells of a done unit's row. Only "done" and "from" are read back;
// the counts are for operators looking at the table.
var (
	qualDone       = []byte("done")
	qualFrom       = []byte("from") // the first millisecond its run imported (Config.From)
	qualSeries     = []byte("series")
	qualSamples    = []byte("samples")
	qualHistograms = []byte("histograms")
)

// State is the set of units already imported.
type State struct {
	t table.Table
}

// OpenState opens the state table of the tables with the prefix, creating
// it when absent.
func OpenState(ctx context.Context, db table.DB, prefix string) (*State, error) {
	t, err := table.EnsureTable(ctx, db, table.TableSpec{
		Name:     prefix + StateTableSuffix,
		Families: []table.FamilySpec{{Name: stateFamily, MaxVersions: 1, BloomFilter: "ROW"}},
	})
	if err != nil {
		return nil, fmt.Errorf("open import state table %s: %w", prefix+StateTableSuffix, err)
	}
	return &State{t: t}, nil
}

// stateKey is the row of a unit imported with a selection: the unit's ID,
// then a digest of the selection, so that a run selecting other series or
// times does not take the unit for done.
func stateKey(selection, unitID string) []byte {
	sum := sha256.Sum256([]byte(selection))
	return []byte(unitID + "\x00" + hex.EncodeToString(sum[:8]))
}

// stateGetBatch bounds the rows of one Get.
const stateGetBatch = 1000

// done reports which of the keys are marked done by a run that imported
// from the millisecond from or earlier. A row written before "from" was
// recorded counts as done, as it did then.
func (s *State) done(ctx context.Context, keys [][]byte, from int64) ([]bool, error) {
	out := make([]bool, 0, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), stateGetBatch)
		rows, err := s.t.Get(ctx, stateFamily, keys[:n])
		if err != nil {
			return nil, fmt.Errorf("read import state: %w", err)
		}
		for _, r := range rows {
			isDone, covers := false, true
			for _, c := range r.Cells {
				switch string(c.Qualifier) {
				case string(qualDone):
					isDone = true
				case string(qualFrom):
					f, err := strconv.ParseInt(string(c.Value), 10, 64)
					covers = err == nil && f <= from
				}
			}
			out = append(out, isDone && covers)
		}
		keys = keys[n:]
	}
	return out, nil
}

// markDone records a unit as imported. It is called only once every write
// of the unit is durable.
func (s *State) markDone(ctx context.Context, key []byte, from int64, c counts, now time.Time) error {
	cell := func(q []byte, v string) table.Cell {
		return table.Cell{Row: key, Family: stateFamily, Qualifier: q, Timestamp: table.LatestTimestamp, Value: []byte(v)}
	}
	err := s.t.Put(ctx, []table.Cell{
		cell(qualSeries, strconv.FormatInt(c.series, 10)),
		cell(qualSamples, strconv.FormatInt(c.samples, 10)),
		cell(qualHistograms, strconv.FormatInt(c.hists, 10)),
		cell(qualFrom, strconv.FormatInt(from, 10)),
		cell(qualDone, now.UTC().Format(time.RFC3339)),
	})
	if err != nil {
		return fmt.Errorf("record unit as imported: %w", err)
	}
	return nil
}
