package rowkey

import (
	"slices"
	"strconv"
)

// TagCond is an exact condition on a row's tags: the tag key K is present
// with one of the values Vs. An empty Vs means K is present with any value.
type TagCond struct {
	K  uint64
	Vs []uint64
}

// neverRegex matches no row key: keys are never empty.
const neverRegex = "(?s)^$"

// KeyRegex is the regex of a row-key filter that accepts the rows of metric
// whose tags satisfy every condition; "" when conds is empty (every row of
// the scanned range qualifies). The metric is checked too, so the regex is
// exact on its own, but a filter only saves transfer: a caller still checks
// rows it gets back. Conditions on the same key are intersected; the result
// is the same whatever the order of conds and of their values. UIDs must fit
// their widths. The regex reads a key as ISO-8859-1, one character per byte,
// in the syntax Java and RE2 agree on (the storage interface's key filter).
func (l Layout) KeyRegex(metric uint64, conds []TagCond) string {
	if len(conds) == 0 {
		return ""
	}
	norm, ok := normalizeConds(conds)
	if !ok {
		return neverRegex
	}
	return string(l.AppendKeyRegex(nil, metric, norm))
}

// normalizeConds returns the conditions sorted by K with one condition per
// key (the intersection of its value sets) and sorted, distinct values. ok is
// false when an intersection is empty: no row can match.
func normalizeConds(conds []TagCond) (norm []TagCond, ok bool) {
	norm = make([]TagCond, 0, len(conds))
	for _, c := range conds {
		vs := slices.Clone(c.Vs)
		slices.Sort(vs)
		norm = append(norm, TagCond{K: c.K, Vs: slices.Compact(vs)})
	}
	slices.SortStableFunc(norm, func(a, b TagCond) int { return compareTagK(TagPair{K: a.K}, TagPair{K: b.K}) })
	out := norm[:0]
	for _, c := range norm {
		if n := len(out); n > 0 && out[n-1].K == c.K {
			prev := &out[n-1]
			switch {
			case len(prev.Vs) == 0: // any value: c decides
				prev.Vs = c.Vs
			case len(c.Vs) == 0:
			default:
				prev.Vs = intersectSorted(prev.Vs, c.Vs)
				if len(prev.Vs) == 0 {
					return nil, false
				}
			}
			continue
		}
		out = append(out, c)
	}
	return out, true
}

// intersectSorted keeps in a the values also in b; both sorted and distinct.
func intersectSorted(a, b []uint64) []uint64 {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// AppendKeyRegex appends the regex of KeyRegex for conditions that are
// already sorted by K, one per key.
//
// The regex reads the key as ISO-8859-1, one character per byte, and uses
// only syntax Java and RE2 agree on. Its shape:
//
//	(?s)^ salt? metric .{4} ( (?:.{P})*? K (?:V1|V2) )... (?:.{P})*$
//
// where P is the pair width: between and after the wanted pairs any number
// of whole other pairs, so every match stays aligned to pair boundaries and
// a UID's bytes can never be matched across two pairs. (?s) lets . match
// every byte, newlines included. $ matches only at the end here even in Java
// (where it also matches before a final line terminator), because the
// position before the last byte is never a pair boundary: P >= 2.
// Tag keys are strictly ascending in a key, so each condition matches at
// most one pair and a backtracking engine stays linear in the key length.
func (l Layout) AppendKeyRegex(dst []byte, metric uint64, conds []TagCond) []byte {
	dst = append(dst, "(?s)^"...)
	if l.SaltWidth() == 1 {
		dst = append(dst, '.')
	}
	dst = appendEscapedUint(dst, metric, l.MetricWidth)
	dst = append(dst, ".{4}"...)
	skip := strconv.AppendInt([]byte("(?:.{"), int64(l.PairWidth()), 10)
	skip = append(skip, "})*"...)
	for _, c := range conds {
		dst = append(dst, skip...)
		dst = append(dst, '?')
		dst = appendEscapedUint(dst, c.K, l.TagKWidth)
		switch len(c.Vs) {
		case 0:
			dst = append(dst, ".{"...)
			dst = strconv.AppendInt(dst, int64(l.TagVWidth), 10)
			dst = append(dst, '}')
		case 1:
			dst = appendEscapedUint(dst, c.Vs[0], l.TagVWidth)
		default:
			dst = append(dst, "(?:"...)
			for i, v := range c.Vs {
				if i > 0 {
					dst = append(dst, '|')
				}
				dst = appendEscapedUint(dst, v, l.TagVWidth)
			}
			dst = append(dst, ')')
		}
	}
	dst = append(dst, skip...)
	return append(dst, '$')
}

// appendEscapedUint appends v as width big-endian bytes, each as \xNN: every
// byte escaped, so no byte can ever be read as regex syntax.
func appendEscapedUint(dst []byte, v uint64, width int) []byte {
	const hex = "0123456789abcdef"
	for shift := 8 * (width - 1); shift >= 0; shift -= 8 {
		c := byte(v >> uint(shift))
		dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
	}
	return dst
}

// MatchConds is the direct evaluation of KeyRegex's conditions on a parsed
// key (the metric aside): every condition holds. conds need not be
// normalized. It is what a caller checks rows against in any case.
func (l Layout) MatchConds(k Key, conds []TagCond) bool {
	n := l.TagCount(k)
	for _, c := range conds {
		found := false
		for i := range n {
			t := l.TagAt(k, i)
			if t.K != c.K {
				continue
			}
			found = len(c.Vs) == 0 || slices.Contains(c.Vs, t.V)
			break
		}
		if !found {
			return false
		}
	}
	return true
}
