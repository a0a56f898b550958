package uid

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for width := 1; width <= 8; width++ {
		for range 1000 {
			v := rng.Uint64() & Max(width)
			b := Append(nil, v, width)
			if len(b) != width || Decode(b) != v {
				t.Fatalf("width %d: %d encodes as %x, decodes as %d", width, v, b, Decode(b))
			}
			p := make([]byte, width)
			Put(p, v)
			if !bytes.Equal(p, b) {
				t.Fatalf("width %d: Put %x, Append %x", width, p, b)
			}
		}
	}
}

func TestMax(t *testing.T) {
	for width, want := range map[int]uint64{0: 0, 1: 255, 3: 1<<24 - 1, 4: 1<<32 - 1, 8: 1<<64 - 1} {
		if got := Max(width); got != want {
			t.Errorf("Max(%d) = %d, want %d", width, got, want)
		}
	}
}

func TestGoldenOrder(t *testing.T) {
	// Big-endian: byte order is numeric order, which scans rely on.
	if got := Append(nil, 0x010203, 4); !bytes.Equal(got, []byte{0, 1, 2, 3}) {
		t.Errorf("Append(0x010203, 4) = %x", got)
	}
	if bytes.Compare(Append(nil, 255, 2), Append(nil, 256, 2)) >= 0 {
		t.Error("255 does not sort before 256")
	}
}

func TestWidthsValidate(t *testing.T) {
	if err := DefaultWidths.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Widths{3, 0, 4}).Validate(); err == nil {
		t.Error("width 0 accepted")
	}
	if err := (Widths{3, 3, 9}).Validate(); err == nil {
		t.Error("width 9 accepted")
	}
}

func BenchmarkAppend(b *testing.B) {
	dst := make([]byte, 0, 8)
	for i := 0; b.Loop(); i++ {
		dst = Append(dst[:0], uint64(i), 4)
	}
}
