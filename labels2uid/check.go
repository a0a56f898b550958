package labels2uid

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"

	"github.com/prom-hbase/prom-hbase/table"
)

// Problem is one kind of disagreement between the UID table's forward
// rows, reverse rows and counters, as Check finds it.
type Problem uint8

const (
	// MissingReverse: a forward row names a UID that no reverse row
	// resolves, so reads cannot name the series that use it. Fixed by
	// writing the reverse row from the forward one.
	MissingReverse Problem = iota
	// WrongReverse: a forward row names a UID whose reverse row holds
	// another string, and that string's forward row does not name the UID.
	// Reads would show the series under the wrong label. Fixed by
	// rewriting the reverse row from the forward one: forward rows are
	// what writes use, and they never change once written.
	WrongReverse
	// SharedUID: two forward rows of one kind name the same UID, so the
	// samples of both strings are stored as one. Not fixed: which data
	// belongs to which string is lost.
	SharedUID
	// UnnamedInData: data rows use a UID that neither a forward nor a
	// reverse row names (CheckOptions.InUse), so reads of those rows fail.
	// Not fixed: the string is lost.
	UnnamedInData
	// ForwardLost: data rows use a UID whose reverse row names a string
	// that has no forward row, or whose forward row names another UID:
	// exact matchers on the string miss those rows (the embedded store's
	// bug for long row keys lost forward rows). Fixed where the forward row
	// is absent, by writing it from the reverse row (a conditional put, as
	// an assignment's); where the string has been assigned another UID
	// since, only re-imported samples can be found by it.
	ForwardLost
	// AboveCounter: a UID in the table (or in data rows) is above its
	// kind's counter, so a later assignment would hand it out again. Fixed
	// by advancing the counter past it.
	AboveCounter
	// BadCell: a cell of the id or name family that no version of the
	// adapter writes: a UID of the wrong width, UID 0, a counter that is
	// not 8 bytes, an unknown qualifier. Not fixed.
	BadCell
	// SecondUID: a reverse row resolves a UID to a string whose forward row
	// names another UID. The UID is unused when it comes from an
	// assignment another writer won and whose reverse row could not be
	// removed; it holds samples that exact matchers no longer find when
	// the forward row was lost (the embedded store before its fix for long
	// row keys); with CheckOptions.InUse, a UID data rows use is reported
	// as ForwardLost instead. Reported, not fixed.
	SecondUID
	// UnusedReverse: a reverse row whose string has no forward row: a UID
	// reserved by an assignment that failed between its two writes, unused
	// and harmless. Counted, not fixed.
	UnusedReverse

	numProblems
)

var problemNames = [numProblems]string{
	"missing reverse mapping", "wrong reverse mapping", "UID shared by two strings",
	"UID in data rows without a name", "lost forward mapping", "UID above the counter",
	"malformed cell", "string with a second UID", "unused reverse mapping",
}

func (p Problem) String() string {
	if p < numProblems {
		return problemNames[p]
	}
	return fmt.Sprintf("Problem(%d)", p)
}

// Harmful says whether the problem can make reads or writes wrong; the
// others are reported for the operator to judge.
func (p Problem) Harmful() bool { return p <= BadCell }

// Finding is one problem, with what it concerns.
type Finding struct {
	Problem Problem
	Kind    Kind
	// Name is the string, UID its UID (the forward row's, where there is
	// one), as the problem describes them.
	Name string
	UID  uint64
	// Detail says the rest: the other string or UID, the malformed cell.
	Detail string
	// Fixed is set once Check (with Fix) repaired it.
	Fixed bool
}

func (f Finding) String() string {
	if f.Problem == BadCell { // its detail says which cell
		return fmt.Sprintf("%s: %s", f.Problem, f.Detail)
	}
	s := fmt.Sprintf("%s %s: %q -> %d", f.Kind, f.Problem, f.Name, f.UID)
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	if f.Fixed {
		s += " (fixed)"
	}
	return s
}

// KindStats counts a kind's rows.
type KindStats struct {
	Forward, Reverse int
	// InData is the number of distinct UIDs of the kind in CheckOptions.InUse.
	InData int
	// Counter is the kind's counter, read after the scan; MaxUID the
	// largest UID any row names or data row uses.
	Counter, MaxUID uint64
}

// CheckReport is what Check found.
type CheckReport struct {
	Kinds [NumKinds]KindStats
	// Counts counts the findings of each problem, Fixed those repaired.
	Counts, Fixed [numProblems]int
	// Findings lists them, at most CheckOptions.MaxListed of each problem.
	Findings []Finding
	// Cells is the number of cells read.
	Cells int
}

// Unfixed is the number of harmful findings left unrepaired.
func (r *CheckReport) Unfixed() int {
	n := 0
	for p := range numProblems {
		if p.Harmful() {
			n += r.Counts[p] - r.Fixed[p]
		}
	}
	return n
}

// CheckOptions tune Check.
type CheckOptions struct {
	// Fix repairs what can be repaired: missing and wrong reverse rows are
	// written from the forward rows, lost forward rows (with InUse) from
	// the reverse rows where the string has none, and counters below a UID
	// in use are advanced past it.
	Fix bool
	// MaxListed bounds the findings of each problem kept in the report
	// (all are counted); 0 means 100.
	MaxListed int
	// InUse, when set, holds the UIDs data rows use, gathered before Check
	// is called: each must be named, and counted by its kind's counter.
	// (A data row is written after its UIDs' reverse rows, so UIDs
	// gathered first are all in the scans that follow.)
	InUse  *InUse
	Logger *slog.Logger
}

// Check reads the whole UID table (both families, once) and reports where
// forward rows, reverse rows and counters disagree, in the manner of
// OpenTSDB's `uid fsck`. widths are the table's UID widths.
//
// It is safe while writers assign UIDs: the assignment protocol increments
// the counter first, then writes the reverse row, then the forward one, so
// Check reads the forward rows first, the reverse rows next and the
// counters last, and reads every suspect reverse row again before it
// reports it. An assignment in flight can still show as an unused reverse
// row, which is harmless. Its memory is about twice the strings of the
// table, held in maps.
func Check(ctx context.Context, tbl table.Table, widths Widths, opts CheckOptions) (*CheckReport, error) {
	if err := widths.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxListed == 0 {
		opts.MaxListed = 100
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &checker{tbl: tbl, widths: widths, opts: opts, rep: &CheckReport{}}
	for k := range c.kinds {
		c.kinds[k] = kindMaps{byName: map[string]uint64{}, byUID: map[uint64]string{}, reverse: map[uint64]string{}}
	}
	if err := c.scanForward(ctx); err != nil {
		return nil, err
	}
	if err := c.scanReverse(ctx); err != nil {
		return nil, err
	}
	for k := range Kind(NumKinds) {
		if err := c.checkKind(ctx, k); err != nil {
			return nil, err
		}
	}
	return c.rep, nil
}

// kindMaps are one kind's mappings as the scans found them.
type kindMaps struct {
	byName  map[string]uint64 // forward rows
	byUID   map[uint64]string // forward rows by UID (the first string seen)
	reverse map[uint64]string // reverse rows
}

type checker struct {
	tbl    table.Table
	widths Widths
	opts   CheckOptions
	rep    *CheckReport
	kinds  [NumKinds]kindMaps
}

func (c *checker) add(f Finding) {
	c.rep.Counts[f.Problem]++
	if f.Fixed {
		c.rep.Fixed[f.Problem]++
	}
	if c.rep.Counts[f.Problem] <= c.opts.MaxListed {
		c.rep.Findings = append(c.rep.Findings, f)
	}
}

// kindOf maps a qualifier of the id or name family to its kind.
func kindOf(q []byte) (Kind, bool) {
	for k := range Kind(NumKinds) {
		if bytes.Equal(q, qualifiers[k]) {
			return k, true
		}
	}
	return 0, false
}

// scanForward reads the id family: the counters and the forward rows.
func (c *checker) scanForward(ctx context.Context) error {
	sc := c.tbl.Scan(ctx, table.ScanOptions{Family: FamilyID})
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		c.rep.Cells += len(row.Cells)
		if bytes.Equal(row.Key, counterRow) {
			c.readCounters(row)
			continue
		}
		if reserved(string(row.Key[:1])) {
			continue // other packages' rows (the store's schema row)
		}
		for _, cell := range row.Cells {
			k, ok := kindOf(cell.Qualifier)
			if !ok {
				c.add(Finding{Problem: BadCell, Name: string(row.Key), Detail: fmt.Sprintf("the forward row %q has an unknown qualifier %q", row.Key, cell.Qualifier)})
				continue
			}
			u, ok := c.decode(k, cell.Value, "forward mapping", string(row.Key))
			if !ok {
				continue
			}
			m := &c.kinds[k]
			name := string(row.Key)
			m.byName[name] = u
			if other, dup := m.byUID[u]; dup {
				c.add(Finding{Problem: SharedUID, Kind: k, Name: name, UID: u, Detail: fmt.Sprintf("so does the forward row of %q", other)})
			} else {
				m.byUID[u] = name
			}
			c.rep.Kinds[k].Forward++
			c.rep.Kinds[k].MaxUID = max(c.rep.Kinds[k].MaxUID, u)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan the forward mappings: %w", err)
	}
	return nil
}

func (c *checker) readCounters(row table.Row) {
	for _, cell := range row.Cells {
		k, ok := kindOf(cell.Qualifier)
		if !ok {
			c.add(Finding{Problem: BadCell, Detail: fmt.Sprintf("the counter row has an unknown qualifier %q", cell.Qualifier)})
			continue
		}
		if len(cell.Value) != 8 {
			c.add(Finding{Problem: BadCell, Kind: k, Detail: fmt.Sprintf("the %s counter is %d bytes, not 8", k, len(cell.Value))})
			continue
		}
		c.rep.Kinds[k].Counter = binary.BigEndian.Uint64(cell.Value)
	}
}

// decode reads a UID of kind k, reporting one of the wrong width or 0.
func (c *checker) decode(k Kind, b []byte, what, name string) (uint64, bool) {
	if len(b) != c.widths[k] {
		c.add(Finding{Problem: BadCell, Kind: k, Name: name, Detail: fmt.Sprintf("%s %s of %q is %d bytes (%x); the table's %s UIDs are %d", k, what, name, len(b), b, k, c.widths[k])})
		return 0, false
	}
	u := DecodeUID(b)
	if u == 0 {
		c.add(Finding{Problem: BadCell, Kind: k, Name: name, Detail: fmt.Sprintf("%s %s of %q is UID 0, which is the empty string's and has no row", k, what, name)})
		return 0, false
	}
	return u, true
}

// scanReverse reads the name family: the reverse rows.
func (c *checker) scanReverse(ctx context.Context) error {
	sc := c.tbl.Scan(ctx, table.ScanOptions{Family: FamilyName})
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		c.rep.Cells += len(row.Cells)
		for _, cell := range row.Cells {
			k, ok := kindOf(cell.Qualifier)
			if !ok {
				c.add(Finding{Problem: BadCell, Detail: fmt.Sprintf("the reverse row %x has an unknown qualifier %q", row.Key, cell.Qualifier)})
				continue
			}
			u, ok := c.decode(k, row.Key, "reverse mapping", string(cell.Value))
			if !ok {
				continue
			}
			c.kinds[k].reverse[u] = string(cell.Value)
			c.rep.Kinds[k].Reverse++
			c.rep.Kinds[k].MaxUID = max(c.rep.Kinds[k].MaxUID, u)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scan the reverse mappings: %w", err)
	}
	return nil
}

// checkKind matches kind k's forward rows with its reverse rows and its
// counter.
func (c *checker) checkKind(ctx context.Context, k Kind) error {
	m := &c.kinds[k]
	c.checkInUse(k)
	// Forward rows whose reverse row is absent or names another string.
	var suspects []string
	for name, u := range m.byName {
		r, ok := m.reverse[u]
		if ok && r == name {
			continue
		}
		if ok {
			if other, has := m.byName[r]; has && other == u {
				continue // two forward rows share u: reported as SharedUID
			}
		}
		suspects = append(suspects, name)
	}
	slices.Sort(suspects)
	if err := c.confirmReverse(ctx, k, suspects); err != nil {
		return err
	}
	// Reverse rows whose string's forward row is absent or names another
	// UID.
	var unused, second, lost []uint64
	for u, name := range m.reverse {
		if f, ok := m.byName[name]; ok && f == u {
			continue
		}
		if _, named := m.byUID[u]; named {
			continue // a forward row names u for another string: reported above
		}
		switch _, ok := m.byName[name]; {
		case c.inUse(k, u):
			lost = append(lost, u)
		case ok:
			second = append(second, u)
		default:
			unused = append(unused, u)
		}
	}
	if err := c.restoreForward(ctx, k, lost); err != nil {
		return err
	}
	slices.Sort(unused)
	slices.Sort(second)
	for _, u := range second {
		c.add(Finding{Problem: SecondUID, Kind: k, Name: m.reverse[u], UID: u,
			Detail: fmt.Sprintf("its forward row names UID %d; no forward row names %d", m.byName[m.reverse[u]], u)})
	}
	for _, u := range unused {
		c.add(Finding{Problem: UnusedReverse, Kind: k, Name: m.reverse[u], UID: u, Detail: "no forward row for the string"})
	}
	return c.checkCounter(ctx, k)
}

// confirmReverse reads the reverse rows of the suspect forward rows again
// and reports, and with Fix repairs, those still missing or wrong. The scans
// alone would do under the assignment protocol (the reverse row is put
// before the forward one, and the reverse rows are scanned after the
// forward rows); reading again costs a multi-get per thousand suspects and
// leaves out what was repaired or written since its scan.
func (c *checker) confirmReverse(ctx context.Context, k Kind, names []string) error {
	m := &c.kinds[k]
	w := c.widths[k]
	for len(names) > 0 {
		batch := names[:min(len(names), 1000)]
		names = names[len(batch):]
		keys := make([][]byte, len(batch))
		for i, name := range batch {
			keys[i] = AppendUID(nil, m.byName[name], w)
		}
		rows, err := c.tbl.Get(ctx, FamilyName, keys)
		if err != nil {
			return fmt.Errorf("read %d %s reverse mappings again: %w", len(keys), k, err)
		}
		var fix []table.Cell
		var found []Finding
		for i, name := range batch {
			u := m.byName[name]
			f := Finding{Problem: MissingReverse, Kind: k, Name: name, UID: u}
			if cell := findCell(rows[i], qualifiers[k]); cell != nil {
				if string(cell.Value) == name {
					continue // written meanwhile
				}
				f.Problem = WrongReverse
				f.Detail = fmt.Sprintf("the reverse row of %d holds %q", u, cell.Value)
			}
			found = append(found, f)
			if c.opts.Fix {
				fix = append(fix, table.Cell{Row: keys[i], Family: FamilyName, Qualifier: qualifiers[k], Timestamp: table.LatestTimestamp, Value: []byte(name)})
			}
		}
		if len(fix) > 0 {
			if err := c.tbl.Put(ctx, fix); err != nil {
				return fmt.Errorf("write %d %s reverse mappings: %w", len(fix), k, err)
			}
			c.opts.Logger.Info("wrote reverse mappings from their forward rows", "kind", k.String(), "count", len(fix))
		}
		for _, f := range found {
			f.Fixed = c.opts.Fix
			c.add(f)
		}
	}
	return nil
}

// checkCounter reads kind k's counter again, after the scans (a UID the
// scans saw was counted before it was written), and reports, and with Fix
// advances, a counter below a UID in use.
func (c *checker) checkCounter(ctx context.Context, k Kind) error {
	st := &c.rep.Kinds[k]
	rows, err := c.tbl.Get(ctx, FamilyID, [][]byte{counterRow})
	if err != nil {
		return fmt.Errorf("read the %s UID counter: %w", k, err)
	}
	if cell := findCell(rows[0], qualifiers[k]); cell != nil && len(cell.Value) == 8 {
		st.Counter = max(st.Counter, binary.BigEndian.Uint64(cell.Value))
	}
	if st.MaxUID <= st.Counter {
		return nil
	}
	f := Finding{Problem: AboveCounter, Kind: k, UID: st.MaxUID, Detail: fmt.Sprintf("the %s counter is %d: the next assignments would hand out UIDs in use again", k, st.Counter)}
	if c.opts.Fix {
		hi, err := c.tbl.Increment(ctx, counterRow, FamilyID, qualifiers[k], int64(st.MaxUID-st.Counter))
		if err != nil {
			return fmt.Errorf("advance the %s UID counter from %d to %d: %w", k, st.Counter, st.MaxUID, err)
		}
		c.opts.Logger.Info("advanced a UID counter past the UIDs in use", "kind", k.String(), "from", st.Counter, "to", hi)
		st.Counter = uint64(hi)
		f.Fixed = true
	}
	c.add(f)
	return nil
}
