package opentsdb

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// dictionary is the UID table as the source uses it: every metric and tag
// key (few, and all needed to check the name mapping), and a bounded cache
// of tag values (there may be millions), filled by the first scan and then
// by batched gets.
type dictionary struct {
	metricUID  map[string][]byte   // OpenTSDB metric name -> UID
	metricUIDs map[string][][]byte // while loading: every UID naming a metric
	tagk       map[string]string   // UID -> Prometheus label name
	tagkName   map[string]string   // UID -> OpenTSDB tag key, for messages

	mu      sync.Mutex
	tagv    map[string]string // UID -> tag value
	tagvCap int
}

// loadDictionary reads the UID table's family "name" once, keeping every
// metric and tag key and the first cap tag values.
func loadDictionary(ctx context.Context, tb tables, o Options) (*dictionary, error) {
	d := &dictionary{
		metricUID: map[string][]byte{}, metricUIDs: map[string][][]byte{},
		tagk: map[string]string{}, tagkName: map[string]string{},
		tagv: map[string]string{}, tagvCap: o.TagValueCache,
	}
	sc := tb.scan(ctx, o.UIDTable, &hrpc.Scan{Families: [][]byte{familyName}}, hbase.ScanOptions{BytesPerCall: o.scanBytes})
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		for _, c := range row.Cells {
			if err := d.add(row.Key, string(c.Qualifier), c.Value, o); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("opentsdb: reading UID table %s: %w", o.UIDTable, err)
	}
	if err := d.resolveMetrics(ctx, tb, o.UIDTable, o.MetricWidth); err != nil {
		return nil, err
	}
	if names := collisions(keys(d.tagkName), LabelName); len(names) > 0 {
		return nil, fmt.Errorf("opentsdb: tag keys of %s map to one label name, which would merge different series: %s",
			o.UIDTable, strings.Join(names, "; "))
	}
	return d, nil
}

func (d *dictionary) add(uid []byte, kind string, name []byte, o Options) error {
	width := map[string]int{qualMetrics: o.MetricWidth, qualTagK: o.TagKWidth, qualTagV: o.TagVWidth}[kind]
	if width == 0 {
		return nil // another kind (a user-defined one): not ours
	}
	if len(uid) != width {
		return fmt.Errorf("opentsdb: UID table %s has a %d-byte %s UID %x, not %d as configured (check the UID widths)",
			o.UIDTable, len(uid), kind, uid, width)
	}
	s := latin1(name)
	switch kind {
	case qualMetrics:
		d.metricUIDs[s] = append(d.metricUIDs[s], uid)
	case qualTagK:
		d.tagk[string(uid)] = LabelName(s)
		d.tagkName[string(uid)] = s
	case qualTagV:
		if len(d.tagv) < d.tagvCap {
			d.tagv[string(uid)] = s
		}
	}
	return nil
}

// resolveMetrics picks each metric's UID. A name may have several: when
// two TSDs (or threads) assign a UID to one new name at once, each writes
// its reverse mapping (UID -> name), and only one wins the forward mapping
// (name -> UID), which is the UID every data row then uses; the loser's
// reverse mapping stays behind, "leaked". The forward mappings of such
// names decide.
func (d *dictionary) resolveMetrics(ctx context.Context, tb tables, table string, width int) error {
	var (
		gets  []*hrpc.Get
		names []string
	)
	for name, uids := range d.metricUIDs {
		if len(uids) == 1 {
			d.metricUID[name] = uids[0]
			continue
		}
		gets = append(gets, &hrpc.Get{Row: toLatin1(name), Families: [][]byte{familyID}})
		names = append(names, name)
	}
	d.metricUIDs = nil
	if len(gets) == 0 {
		return nil
	}
	rows, err := tb.getBatch(ctx, table, gets)
	if err != nil {
		return fmt.Errorf("opentsdb: forward mappings of metrics with several UIDs in %s: %w", table, err)
	}
	for i, cells := range rows {
		for _, c := range cells {
			if string(c.Family) == string(familyID) && string(c.Qualifier) == qualMetrics && len(c.Value) == width {
				d.metricUID[names[i]] = c.Value
			}
		}
		if d.metricUID[names[i]] == nil {
			return fmt.Errorf("opentsdb: metric %q has several UIDs in %s and no forward mapping choosing one (OpenTSDB's `tsdb uid fsck` repairs that)",
				names[i], table)
		}
	}
	return nil
}

// toLatin1 encodes a name decoded by latin1 back into its bytes.
func toLatin1(s string) []byte {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// tagValues looks up the values of uids (tagv UIDs) into out, getting
// those not cached with one batch of gets. A UID the table lacks is left
// out of out.
func (d *dictionary) tagValues(ctx context.Context, tb tables, table string, uids [][]byte, out map[string]string) error {
	var missing []*hrpc.Get
	asked := map[string]bool{}
	d.mu.Lock()
	for _, u := range uids {
		if v, ok := d.tagv[string(u)]; ok {
			out[string(u)] = v
		} else if !asked[string(u)] {
			asked[string(u)] = true
			missing = append(missing, &hrpc.Get{Row: u, Families: [][]byte{familyName}})
		}
	}
	d.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	rows, err := tb.getBatch(ctx, table, missing)
	if err != nil {
		return fmt.Errorf("opentsdb: tag values from %s: %w", table, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, cells := range rows {
		for _, c := range cells {
			if string(c.Qualifier) != qualTagV {
				continue
			}
			v := latin1(c.Value)
			out[string(missing[i].Row)] = v
			if len(d.tagv) >= d.tagvCap {
				clear(d.tagv) // a cache, not the dictionary: start over
			}
			d.tagv[string(missing[i].Row)] = v
		}
	}
	return nil
}
