// The alert rules' behaviour, evaluated by Prometheus's own PromQL engine
// (promqltest, the library behind `promtool test rules`).

package deploy

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/promqltest"
)

// alertCases are promqltest scripts for each alert: series in `load` blocks,
// then `eval` lines where EXPR stands for the alert's expression, each
// followed by the series the alert fires for (none: it must stay quiet).
// They test what the expression selects and computes; `for:` is Prometheus's.
var alertCases = map[string][]string{
	"PromHBaseAdapterDown": {`
load 1m
  up{job="adapter", instance="a:9201"} 1 1 0 0
  up{job="adapter", instance="b:9201"} 1 1 1 1

eval instant at 3m EXPR
  up{job="adapter", instance="a:9201"} 0

eval instant at 1m EXPR
`, `
load 1m
  up{job="prometheus", instance="p:9090"} 1 1 1

eval instant at 2m EXPR
  {job="adapter"} 1
`},
	"PromHBaseWriteErrors": {`
load 1m
  promhbase_remote_write_samples_rejected_total{job="adapter", instance="a", reason="storage_error"} 0+60x10
  promhbase_remote_write_samples_rejected_total{job="adapter", instance="a", reason="invalid_labels"} 0+60x10
  promhbase_remote_write_samples_rejected_total{job="adapter", instance="b", reason="storage_error"} 0x10
  promhbase_remote_write_samples_rejected_total{job="adapter", instance="b", reason="invalid_labels"} 0+600x10

eval instant at 10m EXPR
  {job="adapter", instance="a"} 1
`},
	"PromHBaseWrite503Rate": {`
load 1m
  promhbase_http_request_duration_seconds_count{job="adapter", instance="a", endpoint="write", code="204"} 0+90x10
  promhbase_http_request_duration_seconds_count{job="adapter", instance="a", endpoint="write", code="503"} 0+10x10
  promhbase_http_request_duration_seconds_count{job="adapter", instance="b", endpoint="write", code="204"} 0+99x10
  promhbase_http_request_duration_seconds_count{job="adapter", instance="b", endpoint="write", code="503"} 0+1x10
  promhbase_http_request_duration_seconds_count{job="adapter", instance="b", endpoint="read", code="503"} 0+100x10

eval instant at 10m EXPR
  {job="adapter", instance="a"} 0.1
`},
	"PromHBaseUIDsNearlyExhausted": {`
load 1m
  promhbase_uid_remaining{job="adapter", instance="a", kind="tagv"} 50000
  promhbase_uid_remaining{job="adapter", instance="b", kind="tagv"} 60000
  promhbase_uid_remaining{job="adapter", instance="a", kind="metric"} 16000000

eval instant at 1m EXPR
  {job="adapter", kind="tagv"} 50000
`},
	"PromHBaseUIDsRunningOut": {`
load 1h
  promhbase_uid_remaining{job="adapter", instance="a", kind="tagv"} 1000000-10000x8
  promhbase_uid_remaining{job="adapter", instance="a", kind="tagk"} 1000000-100x8

eval instant at 8h EXPR
  {job="adapter", kind="tagv"} -2440000
`},
	"PromHBaseCompactionLag": {`
load 1m
  promhbase_compactor_lag_seconds{job="adapter", instance="a"} 20000
  promhbase_compactor_lag_seconds{job="adapter", instance="b"} 3600

eval instant at 1m EXPR
  {job="adapter", instance="a"} 20000
`},
	"PromHBaseHBaseUnreachable": {`
load 1m
  promhbase_storage_call_duration_seconds_count{job="adapter", instance="a", op="put", table="prom-data"} 0+60x10
  promhbase_storage_call_errors_total{job="adapter", instance="a", op="put", table="prom-data"} 0+60x10
  promhbase_storage_call_duration_seconds_count{job="adapter", instance="a", op="get", table="prom-uid"} 0+60x10
  promhbase_storage_call_errors_total{job="adapter", instance="a", op="get", table="prom-uid"} 0+30x10
  promhbase_storage_call_duration_seconds_count{job="adapter", instance="b", op="put", table="prom-data"} 0+60x10
  promhbase_storage_call_errors_total{job="adapter", instance="b", op="put", table="prom-data"} 0+6x10

eval instant at 10m EXPR
  {job="adapter", instance="a"} 0.75
`},
	"PromHBaseRemoteWriteBehind": {`
load 1m
  prometheus_remote_storage_highest_timestamp_in_seconds{job="prometheus", instance="p:9090"} 1000+60x30
  prometheus_remote_storage_queue_highest_sent_timestamp_seconds{job="prometheus", instance="p:9090", remote_name="a", url="http://adapter:9201/api/v1/write"} 1000+30x30
  prometheus_remote_storage_queue_highest_sent_timestamp_seconds{job="prometheus", instance="p:9090", remote_name="o", url="http://other:9009/api/v1/push"} 1000x30

eval instant at 30m EXPR
  {job="prometheus", instance="p:9090", url="http://adapter:9201/api/v1/write"} 900

eval instant at 5m EXPR
`},
}

// TestAlertRulesFire evaluates each alert's expression on series made to
// trigger it (and series that must not), with Prometheus's own engine.
func TestAlertRulesFire(t *testing.T) {
	rules := loadAlerts(t)
	for name := range alertCases {
		if _, ok := rules[name]; !ok {
			t.Errorf("alertCases has %s, which %s does not define", name, alertsPath)
		}
	}
	for name, r := range rules {
		cases := alertCases[name]
		if len(cases) == 0 {
			t.Errorf("alert %s has no case in alertCases", name)
			continue
		}
		expr := strings.Join(strings.Fields(r.Expr), " ")
		t.Run(name, func(t *testing.T) {
			for _, c := range cases {
				engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
				promqltest.RunTest(t, strings.ReplaceAll(c, "EXPR", expr), engine)
			}
		})
	}
}
