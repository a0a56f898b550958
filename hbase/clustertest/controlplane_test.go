package clustertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// controlPlaneOutage is how long the data path is watched with the master
// down (after a second adapter has started, which takes some 30 s more),
// then with the master and ZooKeeper down. ZooKeeper's part stays under
// the cluster's 15 s session timeout, as a ZooKeeper restart or a quorum's
// leader election does: the region servers keep their sessions and
// regions, which is what lets the data path carry on.
const controlPlaneOutage = 10 * time.Second

// TestAdapterControlPlaneDown: under remote-write load, SIGKILL the master,
// then ZooKeeper too, then start both again. Reads and writes need neither
// (the adapter has every region, and hbase:meta, located already), so while
// they are down no write may fail even once, /-/ready must stay 200 (an
// adapter taken out of its load balancer for a master failover stops
// ingestion it could carry), and a remote read must return every
// acknowledged sample. With the master down, a second adapter starts on
// the same tables and takes a write of a new series.
func TestAdapterControlPlaneDown(t *testing.T) {
	cl, _, prefix, url, bin := adapterOnCluster(t, "ctl", nil, "prom-data", "prom-uid")
	zkDown, masterDown := false, false
	t.Cleanup(func() {
		// Start what a failed test left down: the next tests need it.
		if zkDown {
			cl.script("zk-start")
		}
		if masterDown {
			cl.script("master-start")
		}
	})

	w := startWriters(url)
	w.waitAcked(10)
	t0 := time.Now()
	cl.script("master-kill")
	masterDown = true
	startWithoutMaster(t, cl, w, bin, prefix)
	watchDataPath(t, w, url, "the master down")
	cl.script("zk-kill")
	zkDown = true
	watchDataPath(t, w, url, "the master and ZooKeeper down")
	outage := time.Since(t0)

	cl.script("zk-start")
	zkDown = false
	cl.script("master-start")
	masterDown = false
	healed := time.Now()
	w.waitAcked(w.ackedCount() + 40)
	w.stop()

	r := w.report(t0, healed)
	t.Logf("master down for %v, ZooKeeper for the last %v of it, both active again after %v, under remote write; %s",
		outage.Round(time.Millisecond), controlPlaneOutage, healed.Sub(t0).Round(time.Millisecond), r)
	if r.failedFirst > 0 || r.clientErrors > 0 {
		t.Errorf("%d requests failed on their first attempt, %d answers were 4xx, while the master and ZooKeeper were down or starting", r.failedFirst, r.clientErrors)
	}
	w.verify(t, url)
	checkTables(t, cl, bin, prefix)
}

// watchDataPath spends controlPlaneOutage asking /-/ready twice a second
// while the writers go on, then reads every acknowledged sample back; it
// fails the test on a /-/ready other than 200 or writes that stop.
func watchDataPath(t *testing.T, w *rwLoad, url, state string) {
	t.Helper()
	before := w.ackedCount()
	client := &http.Client{Timeout: 10 * time.Second}
	notReady := 0
	for end := time.Now().Add(controlPlaneOutage); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		resp, err := client.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			if notReady == 0 {
				t.Errorf("/-/ready with %s: %v", state, describe(resp, err))
			}
			notReady++
		}
	}
	acked := w.ackedCount() - before
	t.Logf("with %s for %v: %d requests acknowledged, /-/ready not 200 %d times", state, controlPlaneOutage, acked, notReady)
	if acked == 0 {
		t.Errorf("no write acknowledged in %v with %s", controlPlaneOutage, state)
	}
	w.verify(t, url)
}

func describe(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// startWithoutMaster starts a second adapter on the tables of prefix while
// the master is down, as a restarted or rescheduled one would be: it must
// become ready (on hbase:meta's table states and the schema row's record of
// the families) and write a series with new strings, which reads back.
func startWithoutMaster(t *testing.T, cl *cluster, w *rwLoad, bin, prefix string) {
	t.Helper()
	t0 := time.Now()
	url := runAdapter(t, cl, bin, prefix)
	ready := time.Since(t0)
	ts := seriesOf(9, 0) // writer "w9": a tag value no one wrote yet
	ts.Samples = []prompb.Sample{{Timestamp: w.base, Value: 42}}
	raw, err := proto.Marshal(&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := postWrite(context.Background(), w.client, url, snappy.Encode(nil, raw)); code/100 != 2 {
		t.Fatalf("a write of a new series to an adapter started with the master down: %d %s", code, msg)
	}
	got, err := readBack(url, "fault_load", w.base, w.base)
	if err != nil {
		t.Fatalf("remote read from an adapter started with the master down: %v", err)
	}
	if v, ok := got["w9/000"][w.base]; !ok || v != 42 {
		t.Errorf("the new series written through the second adapter reads back as %v, %v; want 42", v, ok)
	}
	t.Logf("a second adapter started with the master down: ready after %v, wrote and read a new series", ready.Round(time.Millisecond))
}
