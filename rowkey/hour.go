package rowkey

import "fmt"

// BaseHour splits a sample time in milliseconds into its row's base hour
// (seconds since the epoch, rounded down to the hour) and the offset in
// milliseconds within that hour. Times before the epoch or from 2106 on
// (seconds beyond uint32) have no row.
func BaseHour(tMillis int64) (hour uint32, offsetMillis uint32, err error) {
	if tMillis < 0 {
		return 0, 0, fmt.Errorf("sample time %d ms is before 1970", tMillis)
	}
	secs := tMillis / 1000
	if secs > 1<<32-1 {
		return 0, 0, fmt.Errorf("sample time %d ms is beyond the row key's uint32 seconds", tMillis)
	}
	h := secs - secs%HourSeconds
	return uint32(h), uint32(tMillis - h*1000), nil
}

// HourMillis is the start of a base hour in milliseconds.
func HourMillis(hour uint32) int64 { return int64(hour) * 1000 }

// HourRange is the base hours a query over [mint, maxt] milliseconds must
// read, clamped to what row keys can hold. ok is false when no hour can hold
// a sample of the range.
func HourRange(mint, maxt int64) (start, end uint32, ok bool) {
	const maxMillis = (1<<32)*1000 - 1
	if maxt < 0 || mint > maxt || mint > maxMillis {
		return 0, 0, false
	}
	mint = max(mint, 0)
	maxt = min(maxt, maxMillis)
	start, _, _ = BaseHour(mint)
	end, _, _ = BaseHour(maxt)
	return start, end, true
}
