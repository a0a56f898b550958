package hrpc

import (
	"fmt"
	"strings"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Kind says what a client should do about an exception.
type Kind int

const (
	// Fatal: retrying cannot help (DoNotRetryIOException and its kind).
	Fatal Kind = iota
	// Backoff: wait, then ask the same server again.
	Backoff
	// Relocate: the region is not where we thought; look it up again.
	Relocate
	// RetryNow: ask again at once.
	RetryNow
	// ServerDown: the server is going away; drop its connection and relocate.
	ServerDown
)

func (k Kind) String() string {
	switch k {
	case Fatal:
		return "fatal"
	case Backoff:
		return "backoff"
	case Relocate:
		return "relocate"
	case RetryNow:
		return "retry-now"
	case ServerDown:
		return "server-down"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Exception is an error that an HBase server answered with.
type Exception struct {
	// Class is the Java class name, e.g.
	// org.apache.hadoop.hbase.NotServingRegionException.
	Class string
	// Message is the server's text (the stack trace for a whole-call error).
	Message string
	// Host and Port name the new server for a RegionMovedException.
	Host string
	Port int
	// DoNotRetry is the server's own verdict.
	DoNotRetry bool
}

func (e *Exception) Error() string {
	msg := e.Message
	// The text of a whole-call exception is a Java stack trace: its first
	// line says what went wrong, the rest is noise in a Go error.
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.TrimPrefix(msg, e.Class+": ")
	if msg == "" {
		return "hbase: " + e.Class
	}
	return "hbase: " + e.Class + ": " + msg
}

// ShortName is the class name without its package.
func (e *Exception) ShortName() string {
	return e.Class[strings.LastIndexByte(e.Class, '.')+1:]
}

// Kind classifies the exception.
func (e *Exception) Kind() Kind {
	if k, ok := kinds[e.Class]; ok {
		return k
	}
	if e.DoNotRetry {
		return Fatal
	}
	// Unknown IOExceptions are not retried: a client that retries what it
	// does not understand turns every bug into a hang until the deadline.
	return Fatal
}

const (
	pkgHBase      = "org.apache.hadoop.hbase."
	pkgExceptions = "org.apache.hadoop.hbase.exceptions."
	pkgIPC        = "org.apache.hadoop.hbase.ipc."
	pkgRS         = "org.apache.hadoop.hbase.regionserver."
	pkgQuotas     = "org.apache.hadoop.hbase.quotas."
)

// Class names of the exceptions the client treats specially.
const (
	NotServingRegion  = pkgHBase + "NotServingRegionException"
	RegionMoved       = pkgExceptions + "RegionMovedException"
	TableNotFound     = pkgHBase + "TableNotFoundException"
	TableExists       = pkgHBase + "TableExistsException"
	UnknownScanner    = pkgHBase + "UnknownScannerException"
	ScannerReset      = pkgExceptions + "ScannerResetException"
	OutOfOrderScanner = pkgExceptions + "OutOfOrderScannerNextException"
	CallQueueTooBig   = pkgHBase + "CallQueueTooBigException"
	RegionOpening     = pkgExceptions + "RegionOpeningException"
	// CallTimeout is what this client calls an attempt that got no answer
	// in time (Java's client has the same class).
	CallTimeout = pkgIPC + "CallTimeoutException"
)

// Class names of the master's answers to schema changes.
const (
	// InvalidFamilyOperation answers AddColumn of a family the table has,
	// and ModifyColumn of one it has not.
	InvalidFamilyOperation = pkgHBase + "InvalidFamilyOperationException"
	// ConcurrentTableModification answers a schema change whose table
	// descriptor another change replaced between the master's check and its
	// procedure ("Please retry").
	ConcurrentTableModification = pkgHBase + "ConcurrentTableModificationException"
)

var kinds = map[string]Kind{
	NotServingRegion:                                   Relocate,
	RegionMoved:                                        Relocate,
	RegionOpening:                                      Backoff,
	pkgRS + "RegionServerStoppedException":             ServerDown,
	pkgRS + "RegionServerAbortedException":             ServerDown,
	pkgHBase + "RegionTooBusyException":                Backoff,
	CallQueueTooBig:                                    Backoff,
	CallTimeout:                                        Relocate, // the server may have lost the region, or died
	pkgHBase + "CallDroppedException":                  Backoff,
	pkgIPC + "CallerDisconnectedException":             Backoff,
	pkgQuotas + "RpcThrottlingException":               Backoff,
	pkgHBase + "PleaseHoldException":                   Backoff,
	pkgIPC + "ServerNotRunningYetException":            Backoff,
	pkgHBase + "RetryImmediatelyException":             RetryNow,
	pkgHBase + "MultiActionResultTooLarge":             RetryNow,
	pkgRS + "NoSuchColumnFamilyException":              Fatal,
	TableNotFound:                                      Fatal,
	pkgHBase + "DoNotRetryIOException":                 Fatal,
	UnknownScanner:                                     Relocate,
	ScannerReset:                                       Relocate,
	OutOfOrderScanner:                                  Relocate,
	pkgHBase + "exceptions.ConnectionClosingException": ServerDown,
}

// FromResponse converts the exception of a response header.
func FromResponse(x *pb.ExceptionResponse) *Exception {
	return &Exception{
		Class:      x.GetExceptionClassName(),
		Message:    x.GetStackTrace(),
		Host:       x.GetHostname(),
		Port:       int(x.GetPort()),
		DoNotRetry: x.GetDoNotRetry(),
	}
}

// FromNameBytes converts the exception of one action or region of a Multi.
// The value is Java's stringified exception ("class: message").
func FromNameBytes(x *pb.NameBytesPair) *Exception {
	return &Exception{Class: x.GetName(), Message: string(x.GetValue())}
}
