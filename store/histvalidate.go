package store

import (
	"errors"
	"fmt"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/seriesrules"
)

// validateHistogram checks one histogram sample: its time fits the row key,
// and it passes the shared histogram rule (seriesrules.CheckHistogram: one
// of H and FH, histogram.Validate, a known hint; staleness markers
// included, as the HTTP layer and Prometheus's own head check them), then
// the shape the cell codec and chunk appenders rely on.
func validateHistogram(hs HistogramSample) error {
	if _, _, err := rowkey.BaseHour(hs.T); err != nil {
		return fmt.Errorf("timestamp %d outside what the store can hold (1970 to 2106)", hs.T)
	}
	if v := seriesrules.CheckHistogram(hs.H, hs.FH); v != nil {
		return errors.New(v.Rule)
	}
	return cellcodec.CheckHistogramShape(hs.H, hs.FH)
}
