package pebbletable

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// Describe implements table.DB. Only the attributes Pebble keeps (TTL and
// MaxVersions) come back; the HBase-only ones are left empty. Families come
// sorted by name, as from HBase, whatever their key bytes.
func (db *DB) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	if err := db.enter(ctx); err != nil {
		return table.TableSpec{}, err
	}
	defer db.exit()
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, ok := db.tables[name]
	if !ok {
		return table.TableSpec{}, fmt.Errorf("describe %q: %w", name, table.ErrTableNotFound)
	}
	spec := table.TableSpec{Name: name, Families: make([]table.FamilySpec, len(t.rec.Families))}
	for i, f := range t.rec.Families {
		spec.Families[i] = f.spec()
	}
	slices.SortFunc(spec.Families, func(a, b table.FamilySpec) int { return strings.Compare(a.Name, b.Name) })
	return spec, nil
}

// AlterFamily implements table.DB: the new TTL and MaxVersions (and the
// attributes Pebble only records) are in the catalog, synced, before it
// returns, and reads and the sweep apply the new TTL from then on (a
// shorter one hides the older cells at once).
func (db *DB) AlterFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	if err := db.enter(ctx); err != nil {
		return err
	}
	defer db.exit()
	if fam.TTL < 0 || fam.MaxVersions < 0 {
		return fmt.Errorf("alter family %q of %q: invalid spec %+v", fam.Name, name, fam)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, ok := db.tables[name]
	if !ok {
		return fmt.Errorf("alter family %q of %q: %w", fam.Name, name, table.ErrTableNotFound)
	}
	i := slices.IndexFunc(t.rec.Families, func(f familyRecord) bool { return f.Name == fam.Name })
	if i < 0 {
		return fmt.Errorf("alter family of %q: table has no family %q", name, fam.Name)
	}
	rec := t.rec
	rec.Families = slices.Clone(rec.Families)
	rec.Families[i] = newFamilyRecord(fam, rec.Families[i].index())
	if err := db.writeCatalog(name, rec); err != nil {
		return fmt.Errorf("alter family %q of %q: %w", fam.Name, name, err)
	}
	t.rec = rec
	t.ttls[rec.Families[i].index()].Store(rec.Families[i].TTLMillis)
	return nil
}

// AddFamily implements table.DB. The family takes a key byte that no
// family of the table has had (the highest one plus one), so that the
// existing families keep theirs and their cells; it is in the catalog,
// synced, before it returns, and from then on writes and reads through
// every handle of the table know it.
func (db *DB) AddFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	if err := db.enter(ctx); err != nil {
		return err
	}
	defer db.exit()
	if fam.Name == "" || fam.TTL < 0 || fam.MaxVersions < 0 {
		return fmt.Errorf("add family %q to %q: invalid spec %+v", fam.Name, name, fam)
	}
	// Under db.mu, of racing adds of one family one adds it and the others
	// find it there.
	db.mu.Lock()
	defer db.mu.Unlock()
	t, ok := db.tables[name]
	if !ok {
		return fmt.Errorf("add family %q to %q: %w", fam.Name, name, table.ErrTableNotFound)
	}
	index := 0
	for _, f := range t.rec.Families {
		if f.Name == fam.Name {
			return fmt.Errorf("add family %q to %q: %w", fam.Name, name, table.ErrFamilyExists)
		}
		index = max(index, f.index()+1)
	}
	if index >= maxFamilies {
		return fmt.Errorf("add family %q to %q: no key byte left (%d families at most)", fam.Name, name, maxFamilies)
	}
	rec := t.rec
	rec.Families = append(slices.Clip(rec.Families), newFamilyRecord(fam, index))
	if err := db.writeCatalog(name, rec); err != nil {
		return fmt.Errorf("add family %q to %q: %w", fam.Name, name, err)
	}
	t.rec = rec
	// The TTL first: a read that sees the family must find its retention.
	t.ttls[index].Store(fam.TTL.Milliseconds())
	t.fams.Store(newFamSet(rec))
	return nil
}

// writeCatalog stores a table's catalog entry, synced.
func (db *DB) writeCatalog(name string, rec tableRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return db.pdb.Set(appendCatalogKey(nil, name), v, pebble.Sync)
}
