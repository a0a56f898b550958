// Package region carries calls to one HBase server: one TCP connection for
// one service (ClientService, AdminService or MasterService), with the
// connection preamble, the request and response framing, and many calls in
// flight at once, matched by call id.
//
// It must not know what the calls mean (package hrpc) nor which server holds
// which region (package hbase). A Conn that fails is closed for good, failing
// every call in flight; the caller dials a new one.
package region
