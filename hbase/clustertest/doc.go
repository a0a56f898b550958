// Package clustertest holds fault tests against a real multi-server HBase:
// ZooKeeper, a master and two region servers, each its own process
// (scripts/hbase.sh cluster-start). While a steady write load runs, a
// region server is frozen, killed, stopped, or has its regions moved and
// split, also while the adapter's compactor folds closed hours (and
// deletes what it folded, compact_test.go); afterwards every acknowledged
// write must read back, and errors must stay inside the window in which
// HBase reassigns the regions. The load is the
// HBase client's own batches (faults_test.go), or remote-write requests to
// the adapter binary, retried as Prometheus retries them and read back
// through remote read (adapter_test.go).
//
// The tests are skipped unless PROMHBASE_TEST_CLUSTER_DIR names the run
// directory of such a cluster (scripts/test-faults.sh sets it up). They own
// the cluster while they run: they freeze, kill and restart its servers.
package clustertest
