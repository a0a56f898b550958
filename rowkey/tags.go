package rowkey

import "slices"

// TagPair is a tag as UIDs: tag key UID K, tag value UID V.
type TagPair struct{ K, V uint64 }

// insertionSortMax is the size up to which SortTags uses insertion sort: real
// series have a handful of labels, where it beats the general sort.
const insertionSortMax = 12

// SortTags sorts tags by K, in place and without allocating.
func SortTags(tags []TagPair) {
	if len(tags) > insertionSortMax {
		slices.SortFunc(tags, compareTagK)
		return
	}
	for i := 1; i < len(tags); i++ {
		t := tags[i]
		j := i
		for ; j > 0 && tags[j-1].K > t.K; j-- {
			tags[j] = tags[j-1]
		}
		tags[j] = t
	}
}

func compareTagK(a, b TagPair) int {
	switch {
	case a.K < b.K:
		return -1
	case a.K > b.K:
		return 1
	}
	return 0
}
