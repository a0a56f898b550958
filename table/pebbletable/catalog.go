package pebbletable

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// Describe implements table.DB. Only the attributes Pebble keeps (TTL and
// MaxVersions) come back; the HBase-only ones are left empty.
func (db *DB) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	if err := db.check(ctx); err != nil {
		return table.TableSpec{}, err
	}
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
	return spec, nil
}

// AlterFamily implements table.DB: the new TTL and MaxVersions (and the
// attributes Pebble only records) are in the catalog, synced, before it returns, and reads and the sweep apply the new
// TTL from then on (a shorter one hides the older cells at once).
func (db *DB) AlterFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	if err := db.check(ctx); err != nil {
		return err
	}
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
	rec.Families[i] = newFamilyRecord(fam)
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("alter family %q of %q: %w", fam.Name, name, err)
	}
	if err := db.pdb.Set(appendCatalogKey(nil, name), v, pebble.Sync); err != nil {
		return fmt.Errorf("alter family %q of %q: %w", fam.Name, name, err)
	}
	t.rec = rec
	// The families of rec and of t share their order (sorted by name).
	t.ttls[i].Store(rec.Families[i].TTLMillis)
	return nil
}
