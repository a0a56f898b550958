package labels2uid

import (
	"context"
	"fmt"
	"slices"

	"github.com/prom-hbase/prom-hbase/table"
)

// The check's side of the data rows: the UIDs they use, which the caller
// (which knows row keys) gathers, against the UID table.

// InUse is a set of UIDs of each kind that data rows use. Its memory is
// about 40 bytes a distinct UID.
type InUse struct {
	uids [NumKinds]map[uint64]struct{}
}

// Add records that a data row uses UID v of kind k; UID 0 (the empty
// string) is always named and is not recorded.
func (u *InUse) Add(k Kind, v uint64) {
	if v == 0 {
		return
	}
	if u.uids[k] == nil {
		u.uids[k] = map[uint64]struct{}{}
	}
	u.uids[k][v] = struct{}{}
}

func (c *checker) inUse(k Kind, u uint64) bool {
	if c.opts.InUse == nil {
		return false
	}
	_, ok := c.opts.InUse.uids[k][u]
	return ok
}

// restoreForward reports the UIDs data rows use whose string's forward row
// is lost, and with Fix writes the forward rows that are absent from the
// reverse rows. The put is conditional, as an assignment's: a writer that
// assigned the string meanwhile wins, and that string is reported as not
// fixed.
func (c *checker) restoreForward(ctx context.Context, k Kind, uids []uint64) error {
	m := &c.kinds[k]
	slices.Sort(uids)
	var puts []table.CondPut
	var fixable []int
	found := make([]Finding, len(uids))
	for i, u := range uids {
		name := m.reverse[u]
		found[i] = Finding{Problem: ForwardLost, Kind: k, Name: name, UID: u}
		if f, ok := m.byName[name]; ok {
			found[i].Detail = fmt.Sprintf("data rows use it; the string's forward row names UID %d, so exact matchers miss them", f)
			continue
		}
		found[i].Detail = "data rows use it; the string has no forward row, so exact matchers miss them"
		if c.opts.Fix {
			// Of two lost UIDs of one string the first is restored; the
			// second then finds this forward row above.
			m.byName[name] = u
			row := []byte(name)
			uidb := AppendUID(nil, u, c.widths[k])
			puts = append(puts, table.CondPut{Row: row, Family: FamilyID, Qualifier: qualifiers[k], Put: []table.Cell{{
				Row: row, Family: FamilyID, Qualifier: qualifiers[k], Timestamp: table.LatestTimestamp, Value: uidb,
			}}})
			fixable = append(fixable, i)
		}
	}
	if len(puts) > 0 {
		written, err := c.tbl.CheckAndPutBatch(ctx, puts)
		if err != nil {
			return fmt.Errorf("write %d %s forward mappings: %w", len(puts), k, err)
		}
		n := 0
		for j, i := range fixable {
			if written[j] {
				found[i].Fixed = true
				n++
			}
		}
		c.opts.Logger.Info("wrote lost forward mappings from their reverse rows", "kind", k.String(), "count", n)
	}
	for _, f := range found {
		c.add(f)
	}
	return nil
}

// checkInUse reports the UIDs data rows use that no row of the table
// names. One that a forward row names is a missing or wrong reverse row,
// reported (and fixed) as such.
func (c *checker) checkInUse(k Kind) {
	if c.opts.InUse == nil {
		return
	}
	m := &c.kinds[k]
	st := &c.rep.Kinds[k]
	var unnamed []uint64
	for u := range c.opts.InUse.uids[k] {
		st.InData++
		st.MaxUID = max(st.MaxUID, u)
		if _, ok := m.reverse[u]; ok {
			continue
		}
		if _, ok := m.byUID[u]; !ok {
			unnamed = append(unnamed, u)
		}
	}
	slices.Sort(unnamed)
	for _, u := range unnamed {
		c.add(Finding{Problem: UnnamedInData, Kind: k, UID: u, Detail: "data rows use it; no forward or reverse row names it"})
	}
}
