package tabletest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

func counterValue(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func testIncrement(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ctx := t.Context()
	row := []byte("\x00")
	for _, step := range []struct{ delta, want int64 }{{5, 5}, {-2, 3}, {0, 3}, {1 << 40, 1<<40 + 3}} {
		got, err := tb.Increment(ctx, row, famA, []byte("n"), step.delta)
		if err != nil {
			t.Fatalf("Increment(%d): %v", step.delta, err)
		}
		if got != step.want {
			t.Fatalf("Increment(%d) = %d, want %d", step.delta, got, step.want)
		}
	}
	rows := get(t, tb, "", row)
	if len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != string(counterValue(1<<40+3)) {
		t.Errorf("counter cell after increments: want the 8-byte big-endian %d:%s", int64(1<<40+3), rowsString(rows))
	}

	// Concurrent increments of one counter: every caller sees a distinct value
	// and none is lost.
	const goroutines, each = 8, 25
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen []int64
	)
	start := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			<-start
			for range each {
				n, err := tb.Increment(ctx, row, famB, []byte("c"), 1)
				if err != nil {
					t.Errorf("concurrent Increment: %v", err)
					return
				}
				mu.Lock()
				seen = append(seen, n)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(seen)
	for i, n := range seen {
		if n != int64(i+1) {
			t.Fatalf("concurrent increments returned %v, want 1..%d each once", seen, goroutines*each)
		}
	}
	if n, err := tb.Increment(ctx, row, famB, []byte("c"), 0); err != nil || n != goroutines*each {
		t.Errorf("counter after %d concurrent increments: %d, %v", goroutines*each, n, err)
	}
	if n, err := tb.Increment(ctx, row, famA, []byte("n"), 0); err != nil || n != 1<<40+3 {
		t.Errorf("other counter of the row after concurrent increments: %d, %v", n, err)
	}
}

func testCheckAndPut(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ctx := t.Context()
	ts := recentTS()
	checkAndPut := func(expected []byte, put ...table.Cell) bool {
		t.Helper()
		ok, err := tb.CheckAndPut(ctx, []byte("r"), famA, []byte("lock"), expected, put)
		if err != nil {
			t.Fatalf("CheckAndPut: %v", err)
		}
		return ok
	}
	if !checkAndPut(nil, cell("r", famA, "lock", ts, "1"), cell("r", famB, "data", ts, "d1")) {
		t.Fatalf("CheckAndPut expecting absence of an absent cell did not write")
	}
	want := rowsOf(cell("r", famA, "lock", ts, "1"), cell("r", famB, "data", ts, "d1"))
	checkRows(t, "after CheckAndPut", get(t, tb, "", []byte("r")), want)
	if checkAndPut(nil, cell("r", famB, "data", ts, "d2")) {
		t.Errorf("CheckAndPut expecting absence of a present cell wrote")
	}
	if checkAndPut([]byte("2"), cell("r", famB, "data", ts, "d2")) {
		t.Errorf("CheckAndPut expecting the wrong value wrote")
	}
	if checkAndPut([]byte(""), cell("r", famB, "data", ts, "d2")) {
		t.Errorf("CheckAndPut expecting an empty value wrote over %q", "1")
	}
	// Nothing is checked about empty values: HBase takes an empty expected
	// value for "absent or empty", which the contract does not promise.
	checkRows(t, "after failed CheckAndPuts", get(t, tb, "", []byte("r")), want)
	if !checkAndPut([]byte("1"), cell("r", famA, "lock", ts, "2"), cell("r", famB, "data", ts, "d2")) {
		t.Fatalf("CheckAndPut expecting the value present did not write")
	}
	checkRows(t, "after CheckAndPut of an expected value", get(t, tb, "", []byte("r")),
		rowsOf(cell("r", famA, "lock", ts, "2"), cell("r", famB, "data", ts, "d2")))
	if ok, err := tb.CheckAndPut(ctx, []byte("r"), famA, []byte("absent"), []byte("x"), []table.Cell{cell("r", famB, "data", ts, "d3")}); err != nil || ok {
		t.Errorf("CheckAndPut expecting a value in an absent cell: wrote %v, %v", ok, err)
	}

	// Contenders for an absent cell, released together: exactly one wins,
	// and its value stays. Several rounds give a racy backend several chances
	// to show it.
	const rounds, contenders = 20, 8
	for round := range rounds {
		row := fmt.Sprintf("c%d", round)
		won := make([]bool, contenders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range contenders {
			wg.Go(func() {
				<-start
				var err error
				won[i], err = tb.CheckAndPut(ctx, []byte(row), famA, []byte("q"), nil, []table.Cell{cell(row, famA, "q", ts, fmt.Sprint(i))})
				if err != nil {
					t.Errorf("contender %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, w := range won {
			if w {
				if winner >= 0 {
					t.Fatalf("round %d: contenders %d and %d both won", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no contender won", round)
		}
		checkRows(t, "cell after contention", get(t, tb, "", []byte(row)), rowsOf(cell(row, famA, "q", ts, fmt.Sprint(winner))))
	}
}
