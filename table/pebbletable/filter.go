package pebbletable

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/prom-hbase/prom-hbase/table"
)

// keyFilter evaluates a table.KeyFilter locally. A key passes when it matches
// the regex (if any) and one of the fuzzy patterns (if any), as HBase does with
// both filters in a MUST_PASS_ALL list.
type keyFilter struct {
	re    *regexp.Regexp
	fuzzy []table.FuzzyKey
	buf   []byte // the key read as ISO-8859-1, encoded in UTF-8 for regexp
}

func compileKeyFilter(f *table.KeyFilter) (*keyFilter, error) {
	if f == nil || (f.Regex == "" && len(f.Fuzzy) == 0) {
		return nil, nil
	}
	kf := &keyFilter{fuzzy: f.Fuzzy}
	if f.Regex != "" {
		// Go's $ without (?m) is the end of the text, which makes this a whole-key match.
		re, err := regexp.Compile(`^(?:` + f.Regex + `)$`)
		if err != nil {
			return nil, fmt.Errorf("key filter regex %q: %w", f.Regex, err)
		}
		kf.re = re
	}
	for i, p := range f.Fuzzy {
		if len(p.Key) != len(p.Mask) {
			return nil, fmt.Errorf("fuzzy key %d: key has %d bytes, mask %d", i, len(p.Key), len(p.Mask))
		}
	}
	return kf, nil
}

func (f *keyFilter) accept(key []byte) bool {
	if len(f.fuzzy) > 0 && !matchFuzzy(f.fuzzy, key) {
		return false
	}
	if f.re == nil {
		return true
	}
	for _, b := range key {
		if b >= utf8.RuneSelf {
			// Byte b is the character U+00bb, which UTF-8 spells in two bytes.
			f.buf = f.buf[:0]
			for _, b := range key {
				f.buf = utf8.AppendRune(f.buf, rune(b))
			}
			return f.re.Match(f.buf)
		}
	}
	return f.re.Match(key)
}

func matchFuzzy(patterns []table.FuzzyKey, key []byte) bool {
next:
	for _, p := range patterns {
		if len(key) < len(p.Key) {
			continue
		}
		for i, m := range p.Mask {
			if m == 0 && key[i] != p.Key[i] {
				continue next
			}
		}
		return true
	}
	return false
}
