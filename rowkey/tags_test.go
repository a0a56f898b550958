package rowkey

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, insertionSortMax, insertionSortMax + 1, 100} {
		for range 50 {
			tags := make([]TagPair, n)
			for i := range tags {
				tags[i] = TagPair{K: uint64(rng.IntN(3 * (n + 1))), V: rng.Uint64()}
			}
			want := slices.Clone(tags)
			slices.SortStableFunc(want, compareTagK)
			SortTags(tags)
			if !slices.IsSortedFunc(tags, compareTagK) {
				t.Fatalf("n=%d: not sorted: %v", n, tags)
			}
			// Same multiset of pairs (K order is all SortTags promises).
			slices.SortFunc(tags, cmpPair)
			slices.SortFunc(want, cmpPair)
			if !slices.Equal(tags, want) {
				t.Fatalf("n=%d: pairs changed", n)
			}
		}
	}
}

func cmpPair(a, b TagPair) int {
	if c := compareTagK(a, b); c != 0 {
		return c
	}
	switch {
	case a.V < b.V:
		return -1
	case a.V > b.V:
		return 1
	}
	return 0
}

func TestSortTagsAllocs(t *testing.T) {
	for _, n := range []int{8, 40} {
		tags := make([]TagPair, n)
		allocs := testing.AllocsPerRun(100, func() {
			for i := range tags {
				tags[i].K = uint64(n - i)
			}
			SortTags(tags)
		})
		if allocs != 0 {
			t.Errorf("SortTags of %d tags: %v allocations", n, allocs)
		}
	}
}

func BenchmarkSortTags(b *testing.B) {
	tags := make([]TagPair, 10)
	for b.Loop() {
		for i := range tags {
			tags[i].K = uint64((i * 7) % 10)
		}
		SortTags(tags)
	}
}
