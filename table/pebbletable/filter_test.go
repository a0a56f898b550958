package pebbletable

import (
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

func TestKeyFilter(t *testing.T) {
	for _, tc := range []struct {
		filter table.KeyFilter
		accept []string
		reject []string
	}{
		{table.KeyFilter{Regex: "ab"}, []string{"ab"}, []string{"abc", "xab", "ab\n", "a"}},
		{table.KeyFilter{Regex: `(?s)\x00.\xff`}, []string{"\x00\n\xff", "\x00\x80\xff"}, []string{"\x00\xff", "\x00\x00\xff\x00"}},
		{table.KeyFilter{Regex: `[\x80-\xff]+`}, []string{"\x80", "\xc3\xa9", "\xff\xff"}, []string{"", "a", "\x7f"}},
		{table.KeyFilter{Regex: "a|b"}, []string{"a", "b"}, []string{"ab"}}, // alternation inside the anchors
		{table.KeyFilter{Fuzzy: []table.FuzzyKey{{Key: []byte("a\x00c"), Mask: []byte{0, 1, 0}}}}, []string{"abc", "a\xffc", "abcd"}, []string{"ab", "bbc", "abd"}},
		{table.KeyFilter{Regex: `(?s).*c`, Fuzzy: []table.FuzzyKey{{Key: []byte("a"), Mask: []byte{0}}}}, []string{"abc", "ac"}, []string{"bc", "ab"}},
	} {
		f, err := compileKeyFilter(&tc.filter)
		if err != nil {
			t.Fatalf("%+v: %v", tc.filter, err)
		}
		for _, k := range tc.accept {
			if !f.accept([]byte(k)) {
				t.Errorf("%+v rejected %q", tc.filter, k)
			}
		}
		for _, k := range tc.reject {
			if f.accept([]byte(k)) {
				t.Errorf("%+v accepted %q", tc.filter, k)
			}
		}
	}
	if _, err := compileKeyFilter(&table.KeyFilter{Fuzzy: []table.FuzzyKey{{Key: []byte("ab"), Mask: []byte{0}}}}); err == nil {
		t.Errorf("fuzzy key and mask of different lengths accepted")
	}
	if _, err := compileKeyFilter(&table.KeyFilter{Regex: "("}); err == nil {
		t.Errorf("invalid regex accepted")
	}
}

// FuzzKeyFilterLatin1 checks the regex against a byte-at-a-time reading of
// the key: every byte is one character, whatever UTF-8 would make of it.
func FuzzKeyFilterLatin1(f *testing.F) {
	f.Add([]byte("abc"), byte('b'))
	f.Add([]byte("\xc3\xa9"), byte(0xc3))
	f.Add([]byte("\x00\xff\n"), byte(0xff))
	f.Fuzz(func(t *testing.T, key []byte, b byte) {
		// "the key contains byte b exactly once", spelled as a regex over characters.
		esc := fmt.Sprintf(`\x%02X`, b)
		kf, err := compileKeyFilter(&table.KeyFilter{Regex: `(?s)[^` + esc + `]*` + esc + `[^` + esc + `]*`})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range key {
			if c == b {
				n++
			}
		}
		if got := kf.accept(key); got != (n == 1) {
			t.Fatalf("key %q, byte %#x occurring %d times: accept = %v", key, b, n, got)
		}
	})
}
