package opentsdb

// SetScanBytes caps the bytes of the source's scan round trips: a small cap
// makes HBase cut rows into partial results.
func SetScanBytes(o *Options, n int) { o.scanBytes = n }
