// Package hrpc says what to send to HBase and how to read the answer: the
// request messages of every call this client makes, filters and comparators,
// the KeyValue cell-block codec, and the classification of HBase exceptions.
//
// It must not know how calls travel (package region) nor where they go
// (package hbase): a Call here names a service and a method, nothing more.
package hrpc
