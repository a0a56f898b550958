package benchdata

import "testing"

func TestCountersOnlyGrow(t *testing.T) {
	for k := range Kind(Kinds) {
		g, prev := NewValues(k, int(k)), -1.0
		for range 1000 {
			v := g.Next()
			if k.IsCounter() && v < prev {
				t.Fatalf("counter %s went down: %v after %v", k.Suffix(), v, prev)
			}
			if v < 0 {
				t.Fatalf("%s: negative value %v", k.Suffix(), v)
			}
			prev = v
		}
	}
}

func TestSameSeedSameValues(t *testing.T) {
	a, b, c := NewValues(FloatCounter, 7), NewValues(FloatCounter, 7), NewValues(FloatCounter, 8)
	differ := false
	for range 100 {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("seed 7 gave %v and %v", x, y)
		}
		differ = differ || x != z
	}
	if !differ {
		t.Fatal("seeds 7 and 8 gave the same values")
	}
}
