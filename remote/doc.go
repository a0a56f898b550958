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
package remote
