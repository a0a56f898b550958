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

	"github.com/prom-hbase/prom-hbase/uid"
)

// Kind, its values and Widths are package uid's, named here too so that
// callers of the resolver need one import.
type (
	Kind   = uid.Kind
	Widths = uid.Widths
)

const (
	Metric   = uid.Metric
	TagK     = uid.TagK
	TagV     = uid.TagV
	NumKinds = uid.NumKinds
)

// DefaultWidths are the default UID widths (uid.DefaultWidths).
var DefaultWidths = uid.DefaultWidths

// Families and rows of the UID table.
const (
	// FamilyID holds the forward mappings and the counters.
	FamilyID = "id"
	// FamilyName holds the reverse mappings.
	FamilyName = "name"
)

// counterRow is the row that holds one counter cell per kind.
var counterRow = []byte{0}

// qualifiers are the kinds' qualifiers in the id and name families.
var qualifiers = [NumKinds][]byte{[]byte(Metric.String()), []byte(TagK.String()), []byte(TagV.String())}

// MaxUID is the largest UID that fits width bytes.
func MaxUID(width int) uint64 { return uid.Max(width) }

// ErrReserved is returned for strings that begin with a NUL byte: that prefix
// is reserved for the UID table's own rows.
var ErrReserved = errors.New("strings beginning with a NUL byte are reserved")

// ErrExhausted is returned when a kind has no UIDs left.
var ErrExhausted = errors.New("UID space exhausted")

// AppendUID appends uid as width big-endian bytes.
func AppendUID(dst []byte, v uint64, width int) []byte { return uid.Append(dst, v, width) }

// DecodeUID reads a big-endian UID of len(b) bytes.
func DecodeUID(b []byte) uint64 { return uid.Decode(b) }

func reserved(s string) bool { return len(s) > 0 && s[0] == 0 }
