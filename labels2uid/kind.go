// Package labels2uid maps label strings to fixed-width UIDs and back, in the
// UID table layout of OpenTSDB's tsdb-uid (DESIGN.md section 2):
//
//   - forward row = the string, cell id:<kind> = the UID bytes (big-endian,
//     the kind's width)
//   - reverse row = the UID bytes, cell name:<kind> = the string
//   - counter row "\x00", cell id:<kind> = 8-byte counter advanced with
//     Increment
//
// where <kind> is "metrics", "tagk" or "tagv". New UIDs are assigned with
// OpenTSDB's protocol (increment, then check-and-put the reverse mapping, then
// the forward one), which is safe with many processes assigning at once.
// The empty string has UID 0 in every kind without any row: the counters
// start at 1, and HBase has no empty row key. A series without __name__ thus
// has metric UID 0. Strings that begin with a NUL byte are refused (ErrReserved): the table's
// own rows (the counter row, and the rows other packages keep there, such as
// the store's schema row) live under that prefix.
//
// The package owns the UID table's id and name families, the assignment
// protocol and the in-memory caches. It must not know row keys, samples or
// Prometheus's data model beyond "a string of one of three kinds".
package labels2uid

import (
	"errors"
	"fmt"
)

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

// Families and rows of the UID table.
const (
	// FamilyID holds the forward mappings and the counters.
	FamilyID = "id"
	// FamilyName holds the reverse mappings.
	FamilyName = "name"
)

// counterRow is the row that holds one counter cell per kind.
var counterRow = []byte{0}

var qualifiers = [NumKinds][]byte{[]byte("metrics"), []byte("tagk"), []byte("tagv")}

// String returns the kind's qualifier in the UID table.
func (k Kind) String() string {
	if int(k) < NumKinds {
		return string(qualifiers[k])
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Qualifier is the kind's qualifier in the id and name families. The caller
// must not modify it.
func (k Kind) Qualifier() []byte { return qualifiers[k] }

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

// MaxUID is the largest UID that fits width bytes.
func MaxUID(width int) uint64 {
	if width >= 8 {
		return 1<<64 - 1
	}
	return 1<<(8*uint(width)) - 1
}

// ErrReserved is returned for strings that begin with a NUL byte: that prefix
// is reserved for the UID table's own rows.
var ErrReserved = errors.New("strings beginning with a NUL byte are reserved")

// ErrExhausted is returned when a kind has no UIDs left.
var ErrExhausted = errors.New("UID space exhausted")

// AppendUID appends uid as width big-endian bytes.
func AppendUID(dst []byte, uid uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, byte(uid>>(8*uint(i))))
	}
	return dst
}

// DecodeUID reads a big-endian UID of len(b) bytes.
func DecodeUID(b []byte) uint64 {
	var u uint64
	for _, c := range b {
		u = u<<8 | uint64(c)
	}
	return u
}

func reserved(s string) bool { return len(s) > 0 && s[0] == 0 }
