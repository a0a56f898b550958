package e2e

import (
	"time"
)

// liveQueries are asked over the scraped data, pinned at t (every sample up
// to t has reached the adapter), looking back to from.
func liveQueries(from, t time.Time) []query {
	inst := func(expr string) query { return query{expr: expr, end: t} }
	rng := func(expr string, step time.Duration) query {
		return query{expr: expr, start: from, end: t, step: step}
	}
	agg := func(q query) query { q.approx = true; return q }
	return []query{
		// Raw samples: a range selector in an instant query returns them as
		// stored, timestamps and all.
		inst(`e2e_requests_total[10m]`),
		inst(`e2e_temperature_celsius[10m]`),
		inst(`e2e_special[10m]`),
		inst(`e2e_flap[10m]`),
		inst(`e2e_requests_total`),
		inst(`rate(e2e_requests_total[30s])`),
		inst(`increase(e2e_requests_total{code=~"5.."}[1m])`),
		agg(inst(`sum by (shard, method) (rate(e2e_requests_total[20s]))`)),
		agg(inst(`count by (shard) ({job="e2e-target"})`)),
		inst(`topk(2, e2e_temperature_celsius)`),
		inst(`e2e_temperature_celsius{room=~".*ü.*|東京"}`),
		inst(`e2e_temperature_celsius{room!="kitchen", shard!~"a|b"}`),
		agg(inst(`histogram_quantile(0.95, sum by (le, shard) (rate(e2e_request_duration_seconds_bucket[30s])))`)),
		inst(`histogram_quantile(0.5, rate(e2e_request_duration_seconds_bucket{handler="/api"}[1m]))`),
		inst(`e2e_request_duration_seconds_sum / e2e_request_duration_seconds_count`),
		inst(`e2e_wide`),
		inst(`e2e_wide{l07="value-7-7", l20=~"value-20-.+"}`),
		inst(`e2e_shared_a + e2e_shared_b`),
		inst(`{__name__=~"e2e_shared_.*", k="y"}`),
		inst(`{job="e2e-target", shard="b"}`),
		inst(`{__name__=~"e2e_(flap|churn_info|escape)"}`),
		inst(`e2e_special`),
		inst(`e2e_escape`),
		inst(`up`),
		inst(`scrape_samples_scraped`),
		inst(`e2e_requests_total offset 10s`),
		inst(`e2e_temperature_celsius offset 5s`),
		inst(`absent(e2e_flap{shard="nowhere"})`),
		{expr: `absent(e2e_requests_total)`, end: t, mayBeEmpty: true},
		inst(`e2e_churn_info`),
		agg(inst(`count by (generation) (count_over_time(e2e_churn_info[2m]))`)),
		inst(`max_over_time(e2e_flap[1m])`),
		inst(`count_over_time(e2e_flap[3m])`),
		rng(`e2e_flap`, time.Second),
		rng(`e2e_churn_info{shard="both"}`, time.Second),
		rng(`rate(e2e_requests_total{method="POST"}[15s])`, 2*time.Second),
		agg(rng(`sum by (shard) (e2e_temperature_celsius)`, 3*time.Second)),
		agg(rng(`histogram_quantile(0.9, sum by (le) (rate(e2e_request_duration_seconds_bucket{shard="a"}[20s])))`, 5*time.Second)),
		rng(`e2e_special{kind=~"nan|subnormal|tiny"}`, 4*time.Second),
		rng(`up`, time.Second),
	}
}

// historyQueries are asked over the generated history, which ends at end.
func historyQueries(h *history) []query {
	end := h.end
	inst := func(expr string) query { return query{expr: expr, end: end} }
	rng := func(expr string, start time.Time, step time.Duration) query {
		return query{expr: expr, start: start, end: end, step: step}
	}
	agg := func(q query) query { q.approx = true; return q }
	gap := h.start.Add(1500 * h.step) // series 0 of the gauge is stale for 2 h from here
	return []query{
		inst(`e2e_history_requests_total`),
		inst(`e2e_history_gauge[3h]`),
		{expr: `e2e_history_gauge{series="0"}[3h]`, end: gap.Add(2 * time.Hour)},
		inst(`rate(e2e_history_requests_total[5m])`),
		inst(`increase(e2e_history_requests_total[2h])`),
		agg(inst(`sum by (series) (rate(e2e_history_requests_total[10m]))`)),
		inst(`topk(3, e2e_history_gauge)`),
		agg(inst(`histogram_quantile(0.9, sum by (le) (rate(e2e_history_duration_seconds_bucket[30m])))`)),
		inst(`{origin="direct", job="e2e-history"}`),
		inst(`{__name__=~"e2e_history_.*", series!~"[0-2]"}`),
		inst(`e2e_history_gauge offset 1d`),
		inst(`e2e_history_requests_total offset 47h13m`),
		inst(`max_over_time(e2e_history_gauge[3h] offset 10h)`),
		inst(`count by (__name__) ({__name__=~"e2e_history_.+"})`),
		inst(`count_over_time(e2e_history_gauge[1d])`),
		inst(`absent(e2e_history_gauge{series="nope"})`),
		rng(`e2e_history_gauge`, h.start, 10*time.Minute),
		rng(`rate(e2e_history_requests_total[15m])`, h.start, 7*time.Minute),
		agg(rng(`histogram_quantile(0.5, sum by (le, handler) (rate(e2e_history_duration_seconds_bucket[1h])))`, h.start, 20*time.Minute)),
		agg(rng(`sum by (series) (e2e_history_gauge offset 2h)`, h.start, 30*time.Minute)),
		rng(`last_over_time(e2e_history_gauge{series="0"}[1h])`, h.start, 5*time.Minute),
		// Minute resolution across the staleness gap and its hour rows.
		{expr: `e2e_history_gauge{series=~"0|1"}`, start: gap.Add(-3 * time.Hour), end: gap.Add(3 * time.Hour), step: time.Minute},
		{expr: `changes(e2e_history_gauge{series="0"}[20m])`, start: gap.Add(-time.Hour), end: gap.Add(3 * time.Hour), step: time.Minute},
	}
}
