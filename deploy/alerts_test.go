package deploy

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

const (
	alertsPath     = "prometheus/alerts.yml"
	operationsPath = "../docs/operations.md"
)

// alertRule is one rule of the rule file, as far as the tests look at it.
// Prometheus itself loads the file in TestDashboardLive.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// loadAlerts parses the rule file strictly (unknown fields are errors) and
// returns its alerts by name.
func loadAlerts(t *testing.T) map[string]alertRule {
	t.Helper()
	b, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name     string      `yaml:"name"`
			Interval string      `yaml:"interval"`
			Rules    []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("%s: %v", alertsPath, err)
	}
	rules := map[string]alertRule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: recording rule %s: only alerts belong in %s", g.Name, r.Record, alertsPath)
				continue
			}
			if _, dup := rules[r.Alert]; dup {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			if _, err := model.ParseDuration(r.For); r.For != "" && err != nil {
				t.Errorf("alert %s: for: %v", r.Alert, err)
			}
			rules[r.Alert] = r
		}
	}
	if len(rules) == 0 {
		t.Fatalf("%s defines no alerts", alertsPath)
	}
	return rules
}

// markdownAnchors returns the anchors GitHub makes of a Markdown file's headings.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchors := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// TestAlertRulesValid: the rules parse, their expressions parse as PromQL and
// name only known metrics, carry a severity, a summary and a runbook that exists in the
// operations guide.
func TestAlertRulesValid(t *testing.T) {
	rules := loadAlerts(t)
	anchors := markdownAnchors(t, operationsPath)
	for name, r := range rules {
		checkKnown(t, "alert "+name, r.Expr)
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", name, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s: needs a summary and a description", name)
		}
		file, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
		if file != "docs/operations.md" || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url %q does not point at a heading of docs/operations.md", name, r.Annotations["runbook_url"])
		}
		if anchor != strings.ToLower(name) {
			t.Errorf("alert %s: runbook anchor %q, want %q (a heading named after the alert)", name, anchor, strings.ToLower(name))
		}
	}
}
