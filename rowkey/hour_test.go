package rowkey

import (
	"math/rand/v2"
	"testing"
)

func TestBaseHour(t *testing.T) {
	const lastSecond = 1<<32 - 1
	lastHour := uint32(lastSecond / HourSeconds * HourSeconds)
	for _, tc := range []struct {
		t      int64
		hour   uint32
		offset uint32
		err    bool
	}{
		{t: 0},
		{t: 999, offset: 999},
		{t: 3599_999, offset: 3599_999},
		{t: 3600_000, hour: 3600},
		{t: 1_700_000_123_456, hour: 1_699_999_200, offset: 923_456},
		{t: lastSecond*1000 + 999, hour: lastHour, offset: (lastSecond-lastHour)*1000 + 999},
		{t: (lastSecond + 1) * 1000, err: true},
		{t: -1, err: true},
		{t: -3600_000, err: true},
		{t: 1<<63 - 1, err: true},
	} {
		hour, off, err := BaseHour(tc.t)
		if tc.err {
			if err == nil {
				t.Errorf("BaseHour(%d) = %d, %d; want an error", tc.t, hour, off)
			}
			continue
		}
		if err != nil || hour != tc.hour || off != tc.offset {
			t.Errorf("BaseHour(%d) = %d, %d, %v; want %d, %d", tc.t, hour, off, err, tc.hour, tc.offset)
		}
	}
}

func TestBaseHourRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		ms := rng.Int64N((1 << 32) * 1000)
		hour, off, err := BaseHour(ms)
		if err != nil {
			t.Fatalf("BaseHour(%d): %v", ms, err)
		}
		if hour%HourSeconds != 0 || off >= HourSeconds*1000 || HourMillis(hour)+int64(off) != ms {
			t.Fatalf("BaseHour(%d) = %d, %d", ms, hour, off)
		}
	}
}

func TestHourRange(t *testing.T) {
	const maxMillis = (1<<32)*1000 - 1
	for _, tc := range []struct {
		mint, maxt int64
		start, end uint32
		ok         bool
	}{
		{0, 0, 0, 0, true},
		{3599_999, 3600_000, 0, 3600, true},
		{-5, 7200_000, 0, 7200, true},
		{-5, -1, 0, 0, false},
		{10, 9, 0, 0, false},
		{maxMillis - 1, 1<<63 - 1, (maxMillis / 1000) / 3600 * 3600, (maxMillis / 1000) / 3600 * 3600, true},
		{maxMillis + 1, 1<<63 - 1, 0, 0, false},
		{-1 << 63, 1<<63 - 1, 0, (maxMillis / 1000) / 3600 * 3600, true},
	} {
		start, end, ok := HourRange(tc.mint, tc.maxt)
		if ok != tc.ok || ok && (start != tc.start || end != tc.end) {
			t.Errorf("HourRange(%d, %d) = %d, %d, %v; want %d, %d, %v", tc.mint, tc.maxt, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}
