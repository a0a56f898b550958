// Package uid owns what a UID is: the three kinds of label string that each
// have their own UID space (OpenTSDB's metrics, tagk and tagv), their widths,
// and their fixed-width big-endian encoding, which row keys and the UID table
// share.
//
// It must not know how UIDs are assigned (labels2uid) nor where they are
// written (rowkey, the UID table).
package uid

import "fmt"

// Kind is the kind of a label string; each kind has its own UID space.
type Kind uint8

const (
	// Metric is the value of __name__.
	Metric Kind = iota
	// TagK is a label name other than __name__.
	TagK
	// TagV is a label value other than __name__'s.
	TagV

	// NumKinds is the number of kinds, for arrays indexed by Kind.
	NumKinds = 3
)

var names = [NumKinds]string{"metrics", "tagk", "tagv"}

// String is the kind's name as OpenTSDB's tsdb-uid qualifiers spell it.
func (k Kind) String() string {
	if int(k) < NumKinds {
		return names[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Widths are the UID widths in bytes, indexed by Kind; each is in 1..8.
type Widths [NumKinds]int

// DefaultWidths are metric 3, tag key 3, tag value 4 bytes: 3-byte tag
// values (16.7M) run out in real Kubernetes fleets.
var DefaultWidths = Widths{Metric: 3, TagK: 3, TagV: 4}

// Validate reports a width outside 1..8.
func (w Widths) Validate() error {
	for k, n := range w {
		if n < 1 || n > 8 {
			return fmt.Errorf("%s UID width %d is outside 1..8", Kind(k), n)
		}
	}
	return nil
}

// Max is the largest UID that fits width bytes (0 for a width below 1).
func Max(width int) uint64 {
	switch {
	case width >= 8:
		return 1<<64 - 1
	case width <= 0:
		return 0
	}
	return 1<<(8*uint(width)) - 1
}

// Append appends the width (1..8) low bytes of v, big-endian.
func Append(dst []byte, v uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*uint(i))))
	}
	return dst
}

// Put writes the len(b) <= 8 low bytes of v into b, big-endian.
func Put(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// Decode reads a big-endian UID of len(b) <= 8 bytes.
func Decode(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}
