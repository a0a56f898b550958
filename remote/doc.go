// Package remote serves the Prometheus remote-storage protocols over HTTP:
// remote write 1.0 (prometheus.WriteRequest) and 2.0
// (io.prometheus.write.v2.Request) in, remote read (SAMPLES and
// STREAMED_XOR_CHUNKS) out.
//
// It owns everything between the wire and the store's interfaces: content
// negotiation, snappy, protobuf decoding into reused buffers, validation of
// what senders send, status codes, streamed-read framing, request limits and
// the HTTP metrics. It must not know how or where samples are stored: it sees
// only store.Appender and store.Querier, and nothing of HBase, tables or UIDs.
//
// Float samples and native histograms (integer and float, exponential and
// custom buckets) are decoded, validated and handed to the store; remote
// read returns both, as samples or as XOR, histogram and float-histogram
// chunks. Exemplars are not stored, because remote read cannot return them:
// a request carrying them is accepted and the exemplars dropped, as
// Prometheus's own receiver does when its exemplar storage is off. The 2.0
// answer counts them in X-Prometheus-Remote-Write-Exemplars-Written (the
// specification's "written" is what the receiver accepted), since a 2xx
// counting fewer than were sent makes Prometheus log an error for every
// batch; the exemplars-dropped counter shows what was discarded.
package remote
