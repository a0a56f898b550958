package e2e

import "time"

// nativeQueries are the questions about native histograms: over the
// scraped ones (histTarget and Prometheus A's own request durations),
// pinned at t and looking back to from, and over the generated history nh.
// Plain selectors return the histograms themselves, bucket by bucket;
// the functions cover what PromQL does with them.
func nativeQueries(from, t time.Time, nh *nativeHistory) []query {
	inst := func(expr string) query { return query{expr: expr, end: t} }
	rng := func(expr string, step time.Duration) query {
		return query{expr: expr, start: from, end: t, step: step}
	}
	agg := func(q query) query { q.approx = true; return q }
	qs := []query{
		inst(`e2e_native_latency_seconds[1m]`),
		inst(`e2e_native_weight[1m]`),
		inst(`e2e_native_delta[1m]`),
		inst(`e2e_classic_size_bytes[1m]`),
		inst(`{job="e2e-histograms"}`),
		inst(`prometheus_http_request_duration_seconds[1m]`),
		inst(`rate(e2e_native_latency_seconds[15s])`),
		inst(`histogram_quantile(0.9, rate(e2e_native_latency_seconds[30s]))`),
		agg(inst(`histogram_quantile(0.5, sum by (shard) (rate(e2e_native_delta[1m])))`)),
		inst(`histogram_count(rate(e2e_native_weight[20s]))`),
		inst(`histogram_sum(increase(e2e_native_delta[1m]))`),
		inst(`histogram_fraction(0, 0.1, rate(e2e_native_latency_seconds[1m]))`),
		inst(`histogram_fraction(-1, 1, e2e_native_delta)`),
		inst(`histogram_quantile(0.99, rate(e2e_classic_size_bytes[1m]))`),
		inst(`histogram_avg(rate(e2e_native_weight[30s]))`),
		inst(`histogram_stddev(e2e_native_delta)`),
		inst(`histogram_count(prometheus_http_request_duration_seconds)`),
		agg(inst(`histogram_quantile(0.9, sum by (handler) (rate(prometheus_http_request_duration_seconds[1m])))`)),
		rng(`histogram_quantile(0.9, rate(e2e_native_latency_seconds{shard="a"}[20s]))`, 2*time.Second),
		rng(`e2e_native_weight{shard="b"}`, time.Second),
		rng(`histogram_sum(e2e_classic_size_bytes)`, 3*time.Second),
		rng(`rate(e2e_native_delta{shard="both"}[10s])`, 5*time.Second),
		agg(rng(`histogram_fraction(0.001, 0.05, sum(rate(e2e_native_latency_seconds[30s])))`, 5*time.Second)),
	}
	return append(qs, nativeHistoryQueries(nh)...)
}

// nativeHistoryQueries are asked over the generated native-histogram
// history, which ends at nh.end.
func nativeHistoryQueries(nh *nativeHistory) []query {
	end := nh.end
	inst := func(expr string) query { return query{expr: expr, end: end} }
	rng := func(expr string, step time.Duration) query {
		return query{expr: expr, start: nh.start, end: end, step: step}
	}
	gap := nh.start.Add(1500 * time.Minute) // e2e_nhistory_latency is stale for 2 h from here
	return []query{
		inst(`{job="e2e-nhistory"}`),
		inst(`{job="e2e-nhistory"}[3h]`),
		{expr: `e2e_nhistory_latency[3h]`, end: gap.Add(2 * time.Hour)},
		inst(`rate(e2e_nhistory_latency[5m])`),
		inst(`increase(e2e_nhistory_weight[2h])`),
		inst(`histogram_quantile(0.9, rate(e2e_nhistory_latency[30m]))`),
		inst(`histogram_quantile(0.5, e2e_nhistory_level)`),
		inst(`histogram_fraction(-1, 1, e2e_nhistory_level)`),
		inst(`histogram_count(e2e_nhistory_size offset 1d)`),
		inst(`histogram_sum(rate(e2e_nhistory_size[1h]))`),
		inst(`histogram_quantile(0.75, rate(e2e_nhistory_size[20m] offset 30h))`),
		inst(`count_over_time(e2e_nhistory_switch[1d])`),
		rng(`e2e_nhistory_switch`, 10*time.Minute),
		rng(`histogram_quantile(0.5, rate(e2e_nhistory_latency[1h]))`, 20*time.Minute),
		rng(`histogram_count(rate(e2e_nhistory_weight[15m]))`, 7*time.Minute),
		rng(`histogram_avg(e2e_nhistory_level)`, 30*time.Minute),
		// Minute resolution across the staleness marker and its hour rows.
		{expr: `e2e_nhistory_latency`, start: gap.Add(-3 * time.Hour), end: gap.Add(3 * time.Hour), step: time.Minute},
	}
}
