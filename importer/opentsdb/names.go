package opentsdb

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// latin1 decodes an OpenTSDB name: the UID table holds names as
// ISO-8859-1 bytes (UniqueId's charset), one character per byte.
func latin1(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(2 * len(b))
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

// MetricName is the Prometheus metric name of an OpenTSDB metric: each
// character outside [a-zA-Z0-9_:] becomes '_', and a leading digit gets a
// '_' in front (the prefix of Options.MetricPrefix comes on top).
func MetricName(name string) string { return sanitize(name, true) }

// LabelName is the Prometheus label name of an OpenTSDB tag key: each
// character outside [a-zA-Z0-9_] becomes '_', a leading digit gets a '_' in
// front, and a name starting with "__" (reserved) gets "tag" in front.
func LabelName(tagk string) string {
	s := sanitize(tagk, false)
	if strings.HasPrefix(s, "__") {
		return "tag" + s
	}
	return s
}

func sanitize(name string, colon bool) string {
	var sb strings.Builder
	for i, r := range name {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') ||
			(r >= '0' && r <= '9') || (colon && r == ':')
		if i == 0 && r >= '0' && r <= '9' {
			sb.WriteByte('_')
		}
		if !ok {
			r = '_'
		}
		sb.WriteRune(r)
	}
	if sb.Len() == 0 {
		return "_"
	}
	return sb.String()
}

// collisions lists the distinct names that map to one Prometheus name, as
// "a.b and a_b -> a_b", sorted; nil when the mapping is one to one. A name
// given twice (a tag key with a leaked second UID) is one name.
func collisions(names []string, mapName func(string) string) []string {
	by := make(map[string][]string, len(names))
	for _, n := range names {
		m := mapName(n)
		by[m] = append(by[m], n)
	}
	var out []string
	for m, ns := range by {
		slices.Sort(ns)
		if ns = slices.Compact(ns); len(ns) > 1 {
			out = append(out, fmt.Sprintf("%s -> %s", strings.Join(ns, " and "), m))
		}
	}
	slices.Sort(out)
	return out
}
