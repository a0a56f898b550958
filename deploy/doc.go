// Package deploy holds the files users deploy the adapter with — the Compose
// stack's configuration (prometheus/), the HBase image (hbase/), the Grafana
// dashboard and provisioning (grafana/), the alert rules — and the tests that
// keep them true: the dashboard's and the rules' queries parse and name
// metrics the adapter exports, return data from a real Prometheus scraping a
// loaded adapter, and the Compose stack itself works (scripts/compose-test.sh).
//
// It has no code the adapter uses; it must not be imported.
package deploy
