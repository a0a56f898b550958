package main

import (
	"strings"
	"testing"
)

// TestWriteMultisInFlightRefusesZero: the adapter refuses to start with
// fewer than one Multi in flight, naming the flag, before it connects.
func TestWriteMultisInFlightRefusesZero(t *testing.T) {
	out, code := runAdapter(t, "--web.listen-address=127.0.0.1:0", "--hbase.zookeeper-quorum=127.0.0.1:1",
		"--hbase.write-multis-in-flight=0")
	if code == 0 || !strings.Contains(out, "--hbase.write-multis-in-flight=0: at least 1") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
