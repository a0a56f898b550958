package store

import (
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Compactor passes would each wait MarkDeleteDelay before deleting
	// marks; the protocol holds for any delay (earlyread.go), and a short
	// one also has reads fall back to the ordered read now and then. Tests
	// of the protocol itself set their own.
	markDelay = 50 * time.Millisecond
	os.Exit(m.Run())
}
