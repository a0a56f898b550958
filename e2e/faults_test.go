package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prom-hbase/prom-hbase/internal/scrape"
	"github.com/prometheus/prometheus/prompb"
)

// faultRace sends both adapters the same brand-new series at the same
// moment, several requests each. The UID assignment protocol must give each
// new string one UID whichever adapter wins; a second UID would show in B
// as a series answered twice, or as one missing.
func (s *suite) faultRace() {
	t := s.t
	const nSeries, writers = 40, 6
	ts := time.Now().UnixMilli()
	var batch []prompb.TimeSeries
	for i := range nSeries {
		batch = append(batch, directSeries("e2e_direct_race",
			[]string{"race_key", fmt.Sprintf("k%02d-ß", i), fmt.Sprintf("race_label_%d", i%5), fmt.Sprintf("v%d-😀", i)},
			prompb.Sample{Timestamp: ts, Value: float64(i) + 0.5}))
	}
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	startGun := make(chan struct{})
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGun
			errs[w] = mustRemoteWrite(ctx, s.adapterURLs[w%2]+"/api/v1/write", batch)
		}()
	}
	close(startGun)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("race: %v", err)
		}
	}
	if err := mustRemoteWrite(ctx, s.a.base+"/api/v1/write", batch); err != nil {
		t.Fatal(err)
	}
	s.wroteDirect(batch)
	at := s.pin()
	kb, err := s.b.seriesOf(s.ctx, `{__name__="e2e_direct_race"}`, time.UnixMilli(ts).Add(-time.Minute), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(kb) != nSeries {
		t.Errorf("race: B lists %d series of e2e_direct_race, want %d", len(kb), nSeries)
	}
	s.round("race", []query{{expr: `e2e_direct_race`, end: at}})
	s.faults = append(s.faults, fmt.Sprintf("two adapters, %d writers racing on %d new series (plus A's two queues writing shard=\"both\" and every new churn generation through both adapters): B lists %d series, answers compared above", writers, nSeries, len(kb)))
}

// faultAdapterKill kills adapter 1 with SIGKILL while A's queue rw1 and a
// direct writer feed it, and restarts it. Every write it acknowledged must be
// readable afterwards; Prometheus's retries must fill in the rest.
func (s *suite) faultAdapterKill() {
	t := s.t
	w := &ackedWriter{url: s.adapterURLs[0] + "/api/v1/write"}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()

	time.Sleep(3 * time.Second)
	s.adapters[0].kill()
	killedAt := time.Now()
	time.Sleep(time.Second)
	if err := s.adapters[0].start(); err != nil {
		t.Fatal(err)
	}
	s.adapters[0].waitReady(t, s.adapterURLs[0]+"/-/ready", 2*time.Minute)
	restarted := time.Since(killedAt)
	time.Sleep(3 * time.Second)
	cancel()
	<-done

	// The writer retried every failed write until acknowledged (or left it
	// pending at cancel); finish those, so A and the adapter hold the same.
	wctx, wcancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer wcancel()
	if w.pending != nil {
		if err := mustRemoteWrite(wctx, w.url, []prompb.TimeSeries{*w.pending}); err != nil {
			t.Fatal(err)
		}
		w.acked = append(w.acked, w.pending.Samples...)
	}
	ack := directSeries("e2e_direct_acked", nil, w.acked...)
	if err := mustRemoteWrite(wctx, s.a.base+"/api/v1/write", []prompb.TimeSeries{ack}); err != nil {
		t.Fatal(err)
	}
	s.wroteDirect([]prompb.TimeSeries{ack})
	at := s.pin()

	// Every acknowledged sample, exactly, in B.
	got, err := s.b.query(s.ctx, query{expr: `e2e_direct_acked[1h]`, end: at})
	if err != nil {
		t.Fatal(err)
	}
	var pts []point
	if len(got) == 1 {
		pts = got[0].points
	}
	want := make([]point, len(w.acked))
	for i, smp := range w.acked {
		want[i] = point{t: smp.Timestamp, v: strconv.FormatFloat(smp.Value, 'f', -1, 64)}
	}
	if len(got) != 1 || fmt.Sprint(pts) != fmt.Sprint(want) {
		var before int
		for _, smp := range w.acked {
			if smp.Timestamp < killedAt.UnixMilli() {
				before++
			}
		}
		t.Errorf("adapter kill: B has %d series / %d samples of e2e_direct_acked, want the %d acknowledged ones (%d of them before the kill)%s; the adapters answer remote read with: %s",
			len(got), len(pts), len(want), before, firstPointDiff(want, pts), s.directRead("e2e_direct_acked", time.UnixMilli(w.acked[0].Timestamp), at))
	}
	s.round("adapter-SIGKILL", nil)
	s.faults = append(s.faults, fmt.Sprintf("adapter 1 SIGKILLed during ingest, ready again after %v: %d direct writes acknowledged (all read back), %d refused or unanswered and retried",
		restarted.Round(time.Millisecond), len(w.acked), w.failures))
}

// ackedWriter writes one sample every 100 ms and remembers what was
// acknowledged. A failed sample is retried (same timestamp and value) until
// acknowledged, as Prometheus would.
type ackedWriter struct {
	url      string
	acked    []prompb.Sample
	pending  *prompb.TimeSeries
	failures int
}

func (w *ackedWriter) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; {
		if w.pending == nil {
			s := directSeries("e2e_direct_acked", nil, prompb.Sample{Timestamp: time.Now().UnixMilli(), Value: float64(i)})
			w.pending = &s
			i++
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st := remoteWrite(rctx, w.url, []prompb.TimeSeries{*w.pending})
		cancel()
		if st.ok() {
			w.acked = append(w.acked, w.pending.Samples...)
			w.pending = nil
		} else if ctx.Err() == nil {
			w.failures++
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// faultHBaseDown stops HBase for 30 s during ingest. The adapter must
// answer 5xx (not hang, not acknowledge) meanwhile; Prometheus retries, and
// once HBase is back everything it sent is readable.
func (s *suite) faultHBaseDown() {
	t := s.t
	env, err := runScript(s.ctx, s.root, "hbase.sh", "env")
	if err != nil || env != "PROMHBASE_TEST_ZK="+s.zk {
		t.Fatalf("scripts/hbase.sh (HBASE_RUN_DIR=%q) does not control the HBase at %s (it says %q, %v): export HBASE_RUN_DIR of that HBase",
			hbaseRunDir(), s.zk, env, err)
	}
	before, err := scrape.Get(s.ctx, s.a.base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	stopping := time.Now()
	if _, err := runScript(s.ctx, s.root, "hbase.sh", "stop"); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			// Leave the HBase running for whoever comes next.
			runScript(context.Background(), s.root, "hbase.sh", "resume")
		}
	})

	// Direct writes while HBase is down: each must be refused with 5xx
	// within the adapter's write timeout. Refused samples are kept and
	// written again later, so both sides end up with all of them.
	var sent []prompb.TimeSeries
	codes := map[string]int{}
	for i := 0; i == 0 || time.Since(stopped) < 30*time.Second; i++ {
		ser := directSeries("e2e_direct_probe", nil, prompb.Sample{Timestamp: time.Now().UnixMilli(), Value: float64(i)})
		ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
		st := remoteWrite(ctx, s.adapterURLs[0]+"/api/v1/write", []prompb.TimeSeries{ser})
		cancel()
		sent = append(sent, ser)
		switch {
		case st.ok():
			t.Errorf("HBase down: adapter acknowledged a write (%v) while HBase was stopped", st)
		case st.code/100 == 5:
			codes[strconv.Itoa(st.code)]++
		default:
			codes[st.String()]++
			t.Errorf("HBase down: adapter answered %v; want a 5xx within its write timeout", st)
		}
		time.Sleep(time.Second)
	}
	resuming := time.Now()
	if _, err := runScript(s.ctx, s.root, "hbase.sh", "resume"); err != nil {
		t.Fatal(err)
	}
	resumed = true
	back := time.Now()
	for i, p := range s.adapters {
		p.waitReady(t, s.adapterURLs[i]+"/-/ready", 3*time.Minute)
	}
	for _, ser := range sent {
		s.writeBoth(0, []prompb.TimeSeries{ser})
	}
	at := s.pin()
	caughtUp := time.Since(back)
	after, err := scrape.Get(s.ctx, s.a.base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var retried []string
	for _, q := range []string{"rw1", "rw2"} {
		d := after.Sum("prometheus_remote_storage_samples_retried_total", "remote_name", q) - before.Sum("prometheus_remote_storage_samples_retried_total", "remote_name", q)
		retried = append(retried, fmt.Sprintf("%s %.0f", q, d))
		if failed := after.Sum("prometheus_remote_storage_samples_failed_total", "remote_name", q); failed > 0 {
			t.Errorf("HBase down: A's queue %s dropped %.0f samples as failed (a 4xx from the adapter?)", q, failed)
		}
	}
	s.round("HBase-down", []query{{expr: `e2e_direct_probe[1h]`, end: at}})
	s.faults = append(s.faults, fmt.Sprintf("HBase stopped (stop took %v), down %v, resumed (resume took %v); %d direct writes meanwhile answered %v; A's queues retried samples (%s); caught up %v after resume",
		stopped.Sub(stopping).Round(time.Second), resuming.Sub(stopped).Round(time.Second), back.Sub(resuming).Round(time.Second), len(sent), codes, strings.Join(retried, ", "), caughtUp.Round(time.Second)))
}

// directRead describes what each adapter answers to a remote read of the
// series named name: which adapter holds what, when B and A differ.
func (s *suite) directRead(name string, start, end time.Time) string {
	var out []string
	for i, u := range s.adapterURLs {
		ss, err := remoteRead(s.ctx, u+"/api/v1/read", start, end, &prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: name})
		if err != nil {
			out = append(out, fmt.Sprintf("adapter%d: %v", i+1, err))
			continue
		}
		var n []int
		for _, se := range ss {
			n = append(n, len(se.Samples))
		}
		out = append(out, fmt.Sprintf("adapter%d: %d series with %v samples", i+1, len(ss), n))
	}
	return strings.Join(out, "; ")
}
