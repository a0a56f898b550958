package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// answers holds the read buffers of OpenTSDB's answers, one a query in
// flight.
var answers = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

var dpsKey = []byte(`"dps":`)

// countOpenTSDB counts the data points of an /api/query answer, the
// members of each series' "dps" object, by scanning its bytes. Decoding
// the answer with encoding/json cost the client 0.3-0.5 us a point
// (BENCHMARKS.md, "Read from HFiles: the client's share"), on the two cores
// the TSD and HBase share with it, and so held down the rate measured for
// OpenTSDB; the remote-read clients count frames and chunk headers.
func countOpenTSDB(r io.Reader) (int64, error) {
	bp := answers.Get().(*[]byte)
	defer answers.Put(bp)
	buf := bytes.NewBuffer((*bp)[:0])
	if _, err := buf.ReadFrom(r); err != nil {
		return 0, fmt.Errorf("reading /api/query answer: %w", err)
	}
	*bp = buf.Bytes()
	return countDPs(buf.Bytes())
}

// countDPs counts the members of every "dps" object in b. A "dps" that is
// not an object (a tag of that name, a string value) is not counted.
func countDPs(b []byte) (int64, error) {
	var n int64
	for {
		i := bytes.Index(b, dpsKey)
		if i < 0 {
			return n, nil
		}
		b = bytes.TrimLeft(b[i+len(dpsKey):], " \t\r\n")
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		m, rest, err := countMembers(b)
		if err != nil {
			return 0, err
		}
		n += m
		b = rest
	}
}

// countMembers counts the members of the JSON object b starts with: the
// colons at its top level, outside strings. It returns what follows it.
func countMembers(b []byte) (int64, []byte, error) {
	var n int64
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return n, b[i+1:], nil
			}
		case ':':
			if depth == 1 {
				n++
			}
		}
	}
	return 0, nil, errors.New("decoding /api/query answer: a dps object does not end")
}
