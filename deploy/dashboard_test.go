package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

const dashboardPath = "grafana/dashboards/prom-hbase.json"

// panelQuery is one target of one dashboard panel.
type panelQuery struct {
	Panel string
	RefID string
	Expr  string
}

func (q panelQuery) String() string { return fmt.Sprintf("panel %q query %s", q.Panel, q.RefID) }

type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's panels
}

// loadDashboard parses the dashboard and returns every panel query, checking
// the structure Grafana needs on the way.
func loadDashboard(t *testing.T) []panelQuery {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string         `json:"uid"`
		Title      string         `json:"title"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Fatalf("%s: uid %q, title %q: both must be set", dashboardPath, d.UID, d.Title)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Contains(vars, "datasource") || !slices.Contains(vars, "instance") {
		t.Fatalf("%s: template variables %v, want datasource and instance", dashboardPath, vars)
	}
	var out []panelQuery
	ids := map[int]string{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			if !strings.Contains(string(p.Datasource), "${datasource}") {
				t.Errorf("panel %q: data source %s, want the ${datasource} variable", p.Title, p.Datasource)
			}
			for _, tg := range p.Targets {
				out = append(out, panelQuery{Panel: p.Title, RefID: tg.RefID, Expr: tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

// grafanaVars replaces the dashboard's variables with what Grafana would put
// there: all adapters, and a rate window of rateWindow.
func grafanaVars(expr, rateWindow string) string {
	return strings.NewReplacer("$__rate_interval", rateWindow, "$instance", ".*", "${instance}", ".*").Replace(expr)
}

var promqlParser = parser.NewParser(parser.Options{})

// metricNames parses expr and returns the metric families it selects
// (a histogram's _bucket, _count and _sum map to its family).
func metricNames(expr string) ([]string, error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			err = fmt.Errorf("selector %s names no metric", vs)
			return err
		}
		if !slices.Contains(names, familyOf(name)) {
			names = append(names, familyOf(name))
		}
		return nil
	})
	return names, err
}

func familyOf(name string) string {
	if _, ok := knownMetrics[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if f, ok := strings.CutSuffix(name, suffix); ok {
			if _, known := knownMetrics[f]; known {
				return f
			}
		}
	}
	return name
}

// checkKnown fails for every metric the query names that knownMetrics does
// not list, and returns the names.
func checkKnown(t *testing.T, what, expr string) []string {
	t.Helper()
	names, err := metricNames(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse as PromQL: %v", what, expr, err)
		return nil
	}
	for _, n := range names {
		if _, ok := knownMetrics[n]; !ok {
			t.Errorf("%s names %s, which is not in knownMetrics (metrics_test.go)", what, n)
		}
	}
	return names
}

// TestDashboardQueries: the dashboard is valid JSON with the structure
// Grafana provisioning needs, every query parses as PromQL and names only
// metrics of knownMetrics, and it covers what the operations guide promises.
func TestDashboardQueries(t *testing.T) {
	qs := loadDashboard(t)
	if len(qs) < 20 {
		t.Fatalf("%d queries in the dashboard, expected the full set (over 20)", len(qs))
	}
	seen := map[string]bool{}
	for _, q := range qs {
		if strings.TrimSpace(q.Expr) == "" {
			t.Errorf("%s is empty", q)
			continue
		}
		for _, n := range checkKnown(t, q.String(), grafanaVars(q.Expr, "1m")) {
			seen[n] = true
		}
	}
	// Every adapter metric has a panel, so a metric added to knownMetrics
	// without one is noticed.
	for name, src := range knownMetrics {
		if src != prometheusOwn && !seen[name] {
			t.Errorf("no dashboard panel shows %s", name)
		}
	}
}
