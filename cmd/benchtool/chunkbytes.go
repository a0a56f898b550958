package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"

	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/internal/benchdata"
)

// runChunkBytes prints, per value kind of the data set and for all of it,
// the bytes of its samples as Prometheus XOR chunks cut where Prometheus's
// head cuts them (tsdb.DefaultSamplesPerChunk), and those chunks deflated
// as one stream (gzip level 6, what HBase's GZ block codec does to a block
// of them): the payload any store of XOR chunks starts from, before its own
// keys and indexes.
func runChunkBytes(args []string) error {
	fset := flag.NewFlagSet("chunkbytes", flag.ExitOnError)
	var d dataFlags
	d.register(fset)
	_ = fset.Parse(args)
	if d.rounds <= 0 || d.series <= 0 || d.start == 0 {
		return errors.New("-series and -rounds must be positive, -start is required")
	}
	for _, k := range chunkBytes(seriesSet(d.run, d.series, d.metrics), d.start, d.step, d.rounds) {
		fmt.Printf("kind=%s samples=%d xor_bytes=%d xor_bytes_per_sample=%.3f gz_bytes=%d gz_bytes_per_sample=%.3f\n",
			k.kind, k.samples, k.xor, float64(k.xor)/float64(k.samples), k.gz, float64(k.gz)/float64(k.samples))
	}
	return nil
}

// kindBytes are the chunk bytes of one value kind ("all": every kind).
type kindBytes struct {
	kind         string
	samples      int
	xor, gz      int
	concatenated bytes.Buffer
}

// chunkBytes encodes rounds samples of every series of set, step ms apart
// from start, into XOR chunks of tsdb.DefaultSamplesPerChunk samples; the
// kinds in benchdata's order, then all.
func chunkBytes(set []series, start, step int64, rounds int) []*kindBytes {
	out := make([]*kindBytes, benchdata.Kinds+1)
	for i := range out {
		out[i] = &kindBytes{kind: "all"}
		if i < benchdata.Kinds {
			out[i].kind = benchdata.Kind(i).Suffix()
		}
	}
	all := out[benchdata.Kinds]
	gens := valueGens(set)
	for i, s := range set {
		k := out[s.kind]
		for from := 0; from < rounds; from += tsdb.DefaultSamplesPerChunk {
			c := chunkenc.NewXORChunk()
			app, _ := c.Appender() // a new chunk's appender never fails
			for r := from; r < min(from+tsdb.DefaultSamplesPerChunk, rounds); r++ {
				app.Append(0, start+int64(r)*step, gens[i].Next())
			}
			for _, kb := range []*kindBytes{k, all} {
				kb.samples += c.NumSamples()
				kb.xor += len(c.Bytes())
				kb.concatenated.Write(c.Bytes())
			}
		}
	}
	for _, kb := range out {
		kb.gz = deflatedLen(kb.concatenated.Bytes())
		kb.concatenated = bytes.Buffer{}
	}
	return out
}

func deflatedLen(b []byte) int {
	var cw countWriter
	zw, _ := gzip.NewWriterLevel(&cw, 6) // a valid level never fails
	_, _ = zw.Write(b)                   // countWriter never fails
	_ = zw.Close()
	return cw.n
}

type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
