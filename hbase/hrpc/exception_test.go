package hrpc

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func TestExceptionKinds(t *testing.T) {
	for class, want := range map[string]Kind{
		"org.apache.hadoop.hbase.NotServingRegionException":                 Relocate,
		"org.apache.hadoop.hbase.exceptions.RegionMovedException":           Relocate,
		"org.apache.hadoop.hbase.exceptions.RegionOpeningException":         Backoff,
		"org.apache.hadoop.hbase.RegionTooBusyException":                    Backoff,
		"org.apache.hadoop.hbase.CallQueueTooBigException":                  Backoff,
		"org.apache.hadoop.hbase.PleaseHoldException":                       Backoff,
		"org.apache.hadoop.hbase.ipc.ServerNotRunningYetException":          Backoff,
		"org.apache.hadoop.hbase.regionserver.RegionServerStoppedException": ServerDown,
		"org.apache.hadoop.hbase.RetryImmediatelyException":                 RetryNow,
		"org.apache.hadoop.hbase.MultiActionResultTooLarge":                 RetryNow,
		"org.apache.hadoop.hbase.CallDroppedException":                      Backoff,
		"org.apache.hadoop.hbase.quotas.RpcThrottlingException":             Backoff,
		"org.apache.hadoop.hbase.UnknownScannerException":                   Relocate,
		"org.apache.hadoop.hbase.ipc.CallTimeoutException":                  Relocate,
		"org.apache.hadoop.hbase.TableNotFoundException":                    Fatal,
		"org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException":  Fatal,
		"org.apache.hadoop.hbase.DoNotRetryIOException":                     Fatal,
		"java.io.IOException":                                               Fatal,
		// A short name is not the class: no match by suffix.
		"NotServingRegionException": Fatal,
	} {
		if got := (&Exception{Class: class}).Kind(); got != want {
			t.Errorf("%s: %v, want %v", class, got, want)
		}
	}
}

func TestExceptionFromResponse(t *testing.T) {
	x := FromResponse(&pb.ExceptionResponse{
		ExceptionClassName: proto.String(RegionMoved),
		StackTrace:         proto.String(RegionMoved + ": Region moved to: hostname=h port=16020\n\tat org.apache.Foo(Foo.java:1)"),
		Hostname:           proto.String("h"),
		Port:               proto.Int32(16020),
	})
	if x.Host != "h" || x.Port != 16020 || x.Kind() != Relocate || x.ShortName() != "RegionMovedException" {
		t.Fatalf("%+v", x)
	}
	if got, want := x.Error(), "hbase: "+RegionMoved+": Region moved to: hostname=h port=16020"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	y := FromNameBytes(&pb.NameBytesPair{Name: proto.String(TableNotFound), Value: []byte("t1")})
	if y.Error() != "hbase: "+TableNotFound+": t1" || y.Kind() != Fatal {
		t.Errorf("%v %v", y, y.Kind())
	}
}
