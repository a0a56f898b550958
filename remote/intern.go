package remote

// interner turns label bytes into strings, allocating each distinct string
// once: senders repeat the same label names and values in every request, so
// in steady state decoding allocates no strings at all. The strings are
// ordinary heap strings, safe for the store to keep (in its UID cache, say);
// they never point into the pooled request buffer.
//
// An interner belongs to one pooled writeRequest, so it needs no lock. It is
// bounded: when it holds more than maxInternBytes it starts over.
type interner struct {
	m     map[string]string
	bytes int
}

const (
	maxInternBytes = 8 << 20
	// Longer strings are rare (help texts, odd label values) and not worth
	// keeping.
	maxInternLen = 512
)

func (in *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // no allocation: the compiler special-cases this lookup
		return s
	}
	if in.m == nil || in.bytes > maxInternBytes {
		in.m = make(map[string]string, 1024)
		in.bytes = 0
	}
	s := string(b)
	in.m[s] = s
	in.bytes += len(s) + 32
	return s
}
