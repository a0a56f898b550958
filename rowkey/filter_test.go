package rowkey

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"github.com/prom-hbase/prom-hbase/uid"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// latin1 is the ISO-8859-1 reading of a key: one rune per byte, as the
// backends read it for the storage interface's key filter.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// filterCase is a random key and random conditions drawn from a small set of
// UIDs, so that conditions hit often.
type filterCase struct {
	l      Layout
	metric uint64
	conds  []TagCond
	key    []byte
	want   bool
}

func randomFilterCase(rng *rand.Rand) filterCase {
	l := randomLayout(rng)
	// Byte values that trip a careless regex: newlines, '.', '\', 0x85 (Java's
	// NEL line terminator), 0xff.
	special := []uint64{0x00, 0x0a, 0x0d, 0x2e, 0x5c, 0x85, 0xff, 0x0a0a, 0x2e2e}
	uid := func(width int) uint64 {
		if rng.IntN(2) == 0 {
			return special[rng.IntN(len(special))] & uid.Max(width)
		}
		return uint64(rng.IntN(6)) & uid.Max(width)
	}
	c := filterCase{l: l, metric: uid(l.MetricWidth)}
	keyMetric := c.metric
	if rng.IntN(5) == 0 {
		keyMetric = uid(l.MetricWidth)
	}
	seen := map[uint64]bool{}
	var tags []TagPair
	for range rng.IntN(8) {
		k := uid(l.TagKWidth)
		if !seen[k] {
			seen[k] = true
			tags = append(tags, TagPair{K: k, V: uid(l.TagVWidth)})
		}
	}
	SortTags(tags)
	c.key = l.AppendRowKey(nil, l.AppendSeriesID(nil, keyMetric, tags), uint32(uid(4)))
	for range 1 + rng.IntN(3) {
		cond := TagCond{K: uid(l.TagKWidth)}
		if len(tags) > 0 && rng.IntN(4) != 0 {
			// Mostly a tag of the key, often with its value among Vs.
			tag := tags[rng.IntN(len(tags))]
			cond.K = tag.K
			if rng.IntN(2) == 0 {
				cond.Vs = append(cond.Vs, tag.V)
			}
		}
		for range rng.IntN(4) {
			cond.Vs = append(cond.Vs, uid(l.TagVWidth))
		}
		c.conds = append(c.conds, cond)
	}
	k, err := l.Parse(c.key)
	if err != nil {
		panic(err)
	}
	c.want = keyMetric == c.metric && l.MatchConds(k, c.conds)
	return c
}

func TestKeyRegexRE2(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	matched := 0
	for range 10000 {
		c := randomFilterCase(rng)
		r := c.l.KeyRegex(c.metric, c.conds)
		if r == "" {
			t.Fatalf("no regex for %d conditions", len(c.conds))
		}
		checkDialect(t, r)
		re, err := regexp.Compile(r)
		if err != nil {
			t.Fatalf("regex %q: %v", r, err)
		}
		if got := re.MatchString(latin1(c.key)); got != c.want {
			t.Fatalf("layout %+v metric %d conds %+v key %x: regex %q matched %v, want %v", c.l, c.metric, c.conds, c.key, r, got, c.want)
		}
		if c.want {
			matched++
		}
	}
	if matched < 1000 {
		t.Errorf("only %d of 10000 random keys matched: the test exercises too little", matched)
	}
}

func TestKeyRegexNone(t *testing.T) {
	if r := DefaultLayout.KeyRegex(1, nil); r != "" {
		t.Errorf("no conditions: regex %q, want none", r)
	}
}

func TestKeyRegexNormalization(t *testing.T) {
	l := Layout{MetricWidth: 1, TagKWidth: 1, TagVWidth: 1}
	a := l.KeyRegex(1, []TagCond{{K: 2, Vs: []uint64{3, 1, 1}}, {K: 1}})
	b := l.KeyRegex(1, []TagCond{{K: 1}, {K: 2, Vs: []uint64{1, 3}}})
	if a != b {
		t.Errorf("order of conditions changes the regex: %q vs %q", a, b)
	}
	want := `(?s)^\x01.{4}(?:.{2})*?\x01.{1}(?:.{2})*?\x02(?:\x01|\x03)(?:.{2})*$`
	if a != want {
		t.Errorf("regex %q, want %q", a, want)
	}
	// Two conditions on one key intersect; disjoint value sets match nothing.
	c := l.KeyRegex(1, []TagCond{{K: 2, Vs: []uint64{1, 3}}, {K: 2, Vs: []uint64{3, 4}}})
	if d := l.KeyRegex(1, []TagCond{{K: 2, Vs: []uint64{3}}}); c != d {
		t.Errorf("intersection %q, want %q", c, d)
	}
	e := l.KeyRegex(1, []TagCond{{K: 2, Vs: []uint64{1}}, {K: 2, Vs: []uint64{3}}})
	key := l.AppendRowKey(nil, l.AppendSeriesID(nil, 1, []TagPair{{2, 1}}), 0)
	if regexp.MustCompile(e).MatchString(latin1(key)) {
		t.Errorf("disjoint conditions: %q matches %x", e, key)
	}
	// The caller's conditions are left as they were.
	conds := []TagCond{{K: 5, Vs: []uint64{3, 2}}, {K: 1}}
	l.KeyRegex(1, conds)
	if conds[0].K != 5 || conds[0].Vs[0] != 3 {
		t.Errorf("conditions modified: %+v", conds)
	}
}

var dialectToken = regexp.MustCompile(`^(?:\(\?s\)|\(\?:|\\x[0-9a-f]{2}|\{[0-9]+\}|[\^$.)|*?])`)

// checkDialect fails unless re uses only what the storage interface's key filter allows (and
// what this package means to emit).
func checkDialect(t *testing.T, re string) {
	t.Helper()
	for s := re; s != ""; {
		m := dialectToken.FindString(s)
		if m == "" {
			t.Fatalf("regex %q: %q is outside the dialect", re, s)
		}
		s = s[len(m):]
	}
}

// TestKeyRegexJava runs the same random cases through java.util.regex the
// way HBase's RegexStringComparator does (find on the ISO-8859-1 string):
// HBase evaluates the filter, so Java must agree with RE2.
func TestKeyRegexJava(t *testing.T) {
	// Launching a source file needs a JDK's compiler, not just a runtime.
	java, err := exec.LookPath("java")
	if _, errc := exec.LookPath("javac"); err != nil || errc != nil {
		t.Skip("no JDK on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "Match.java")
	if err := os.WriteFile(src, []byte(javaMatcher), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var in bytes.Buffer
	var cases []filterCase
	for range 3000 {
		c := randomFilterCase(rng)
		cases = append(cases, c)
		fmt.Fprintf(&in, "%s\t%s\n", c.l.KeyRegex(c.metric, c.conds), hex.EncodeToString(c.key))
	}
	cmd := exec.Command(java, src)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v: %s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	i := 0
	for ; sc.Scan(); i++ {
		c := cases[i]
		if got := sc.Text() == "1"; got != c.want {
			t.Fatalf("java: layout %+v metric %d conds %+v key %x: matched %v, want %v", c.l, c.metric, c.conds, c.key, got, c.want)
		}
	}
	if i != len(cases) {
		t.Fatalf("java answered %d of %d cases", i, len(cases))
	}
}

const javaMatcher = `
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.regex.Pattern;

public class Match {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
    for (String line; (line = in.readLine()) != null; ) {
      String[] f = line.split("\t", -1);
      byte[] key = HexFormat.of().parseHex(f[1]);
      // As HBase's RegexStringComparator: DOTALL by default, find().
      boolean m = Pattern.compile(f[0], Pattern.DOTALL)
          .matcher(new String(key, StandardCharsets.ISO_8859_1)).find();
      out.println(m ? "1" : "0");
    }
    out.flush();
  }
}
`

func BenchmarkKeyRegex(b *testing.B) {
	l := DefaultLayout
	conds := []TagCond{{K: 3, Vs: []uint64{1}}, {K: 1, Vs: []uint64{7, 8, 9}}}
	for b.Loop() {
		_ = l.KeyRegex(42, conds)
	}
}
