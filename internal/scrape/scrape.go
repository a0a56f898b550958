// Package scrape reads a /metrics page in Prometheus's text exposition
// format, as the end-to-end, cluster and deployment tests watch a running
// adapter or Prometheus: what it exports and the value of a counter or
// gauge. It knows the exposition format only, never what a metric means.
package scrape

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Page is one scrape: the metric families it held, by name.
type Page map[string]*dto.MetricFamily

// Get scrapes url (a whole address, "/metrics" included) and parses the
// page. A page not read within 10 s is an error: the processes watched
// answer in milliseconds, and a test must not hang on one that does not.
func Get(ctx context.Context, url string) (Page, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Without an Accept header both Prometheus and client_golang answer in
	// the text format this parser reads.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return Page(fams), nil
}

// Sum adds up the samples of the counter, gauge or untyped metric name
// whose labels include each (name, value) pair of match; 0 when there is
// none, as a counter not yet exported is 0. Summaries and histograms count
// as nothing: ask for their series by the family's name elsewhere.
func (p Page) Sum(name string, match ...string) float64 {
	if len(match)%2 != 0 {
		panic("scrape: Sum takes label names and values in pairs")
	}
	fam := p[name]
	if fam == nil {
		return 0
	}
	sum := 0.0
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, match []string) bool {
	for i := 0; i < len(match); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == match[i] && l.GetValue() == match[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
