package main

import (
	"errors"
	"testing"
	"time"
)

func TestSteady(t *testing.T) {
	for _, tc := range []struct {
		windows []float64
		want    bool
	}{
		{nil, false},
		{[]float64{10, 10, 10, 10}, false},                  // too few windows
		{[]float64{4, 6, 9, 12, 14, 15}, false},             // still climbing
		{[]float64{4, 9, 13.5, 14.3, 13.9, 14, 14}, false},  // 13.5 to 14.3 is 5.9 %
		{[]float64{4, 9, 13.8, 14.3, 13.9, 14, 14.1}, true}, // within 5 %
		{[]float64{9.6, 9.6, 9.6, 9.7, 12.5}, false},        // a plateau, then a step
		{[]float64{14, 14, 14, 14, 7}, false},               // a dip is not steady either
		{[]float64{0, 0, 0, 0, 0}, false},
	} {
		if got := steady(tc.windows, 0.05); got != tc.want {
			t.Errorf("steady(%v) = %v, want %v", tc.windows, got, tc.want)
		}
	}
}

func TestUntilSteady(t *testing.T) {
	// A rate that climbs for its first 20 passes, then holds.
	calls := 0
	climbing := func() (float64, error) {
		calls++
		return float64(min(calls, 20)), nil
	}
	passes, ok, windows, err := untilSteady(climbing, time.Now(), time.Minute, 10*time.Millisecond, 0.05)
	if err != nil || !ok {
		t.Fatalf("untilSteady: ok %v, err %v", ok, err)
	}
	if passes != calls || calls <= 20 {
		t.Errorf("passes %d, calls %d: want more than 20, each counted", passes, calls)
	}
	if last := windows[len(windows)-1]; last != 20 {
		t.Errorf("last window rate %v, want 20", last)
	}

	// The limit ends the wait, without an error, when the rate never settles.
	n := 0
	swinging := func() (float64, error) { n++; return float64(1 + n%2*9), nil }
	if _, ok, _, err := untilSteady(swinging, time.Now().Add(-time.Minute), time.Second, 10*time.Millisecond, 0.05); ok || err != nil {
		t.Errorf("past the limit: ok %v, err %v; want false, nil", ok, err)
	}

	// A failed pass ends it with the error.
	boom := errors.New("boom")
	if _, _, _, err := untilSteady(func() (float64, error) { return 0, boom }, time.Now(), time.Minute, 10*time.Millisecond, 0.05); !errors.Is(err, boom) {
		t.Errorf("err %v, want %v", err, boom)
	}
}
