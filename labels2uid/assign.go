package labels2uid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// GetOrAssign sets b.UIDs to the UIDs of b.Names, assigning UIDs to the
// strings that have none yet. Cache misses are read with one Get of forward
// rows; the strings still missing are assigned in one batch per kind (see
// assignKind), shared with concurrent callers in this process that ask for
// the same strings.
//
// A string that needs a UID of a kind whose space is used up is not an
// error: it is left with b.Found false (see Batch.Exhausted), so that the
// caller can refuse the series that need it and write the rest. The error is
// for storage faults only; after one, some strings may have UIDs in the
// table that this call did not report, which a later call finds.
func (r *Resolver) GetOrAssign(ctx context.Context, b *Batch) error {
	if err := r.lookup(ctx, b); err != nil {
		return err
	}
	pending := map[flightKey][]int{}
	for k := range NumKinds {
		for i, ok := range b.Found[k] {
			if !ok {
				key := flightKey{Kind(k), b.Names[k][i]}
				pending[key] = append(pending[key], i)
			}
		}
	}
	if len(pending) == 0 {
		return nil
	}
	own, waits := r.claim(pending, b)
	err := r.runFlights(ctx, own)
	var waitErr error
	for _, fr := range append(own[:len(own):len(own)], waits...) {
		select {
		case <-fr.f.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for a concurrent UID assignment: %w", ctx.Err())
		}
		if fr.f.err != nil {
			if waitErr == nil {
				waitErr = fr.f.err
			}
			continue
		}
		for _, i := range pending[fr.key] {
			b.UIDs[fr.key.kind][i] = fr.f.uid
			b.Found[fr.key.kind][i] = fr.f.uid != 0
		}
	}
	if err == nil {
		err = waitErr
	}
	return err
}

// flightRef is one string of a GetOrAssign and the flight that answers it.
type flightRef struct {
	key flightKey
	f   *flight
}

// claim sorts the pending strings, under the flight lock, into those another
// caller is assigning already (waits), those this caller assigns (own), and
// those whose assignment finished since the lookup (filled into b at once):
// the cache is checked again under the lock because a flight fills the cache
// before it leaves the flight table.
func (r *Resolver) claim(pending map[flightKey][]int, b *Batch) (own, waits []flightRef) {
	r.flightMu.Lock()
	defer r.flightMu.Unlock()
	for key, idx := range pending {
		if uid, ok := r.forward[key.kind].peek(key.name); ok {
			for _, i := range idx {
				b.UIDs[key.kind][i], b.Found[key.kind][i] = uid, true
			}
			continue
		}
		if f, ok := r.flights[key]; ok {
			waits = append(waits, flightRef{key, f})
			continue
		}
		f := &flight{done: make(chan struct{})}
		r.flights[key] = f
		own = append(own, flightRef{key, f})
	}
	return own, waits
}

// runFlights assigns the strings of own, one batch per kind, the kinds in
// parallel, and completes their flights.
func (r *Resolver) runFlights(ctx context.Context, own []flightRef) error {
	var byKind [NumKinds][]flightRef
	for _, fr := range own {
		byKind[fr.key.kind] = append(byKind[fr.key.kind], fr)
	}
	var wg sync.WaitGroup
	var errs [NumKinds]error
	for k := range NumKinds {
		refs := byKind[k]
		if len(refs) == 0 {
			continue
		}
		wg.Go(func() {
			names := make([]string, len(refs))
			for i, fr := range refs {
				names[i] = fr.key.name
			}
			uids, err := r.assignKind(ctx, Kind(k), names)
			errs[k] = err
			r.complete(Kind(k), refs, uids, err)
		})
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}

// complete publishes the answers of a kind's flights: the cache first, then
// the flight table, so that claim never misses a finished assignment.
func (r *Resolver) complete(kind Kind, refs []flightRef, uids []uint64, err error) {
	for i, fr := range refs {
		if err != nil {
			fr.f.err = err
			continue
		}
		fr.f.uid = uids[i]
		if uids[i] != 0 {
			r.forward[kind].put(fr.key.name, uids[i])
			r.reverse[kind].put(uids[i], fr.key.name)
		}
	}
	r.flightMu.Lock()
	for _, fr := range refs {
		delete(r.flights, fr.key)
	}
	r.flightMu.Unlock()
	for _, fr := range refs {
		close(fr.f.done)
	}
}

// assignKind assigns UIDs to names, strings of one kind that had none when
// looked up, with OpenTSDB's protocol batched (DESIGN.md section 2):
//
//  1. one Increment of the kind's counter by len(names) reserves a range;
//  2. one multi-put writes the reverse rows (UID -> string) of the range,
//     before any forward row names those UIDs, so a crash never leaves a
//     forward mapping that cannot be resolved; the UIDs are ours alone, so
//     a plain put, safe to repeat, is enough;
//  3. one batch of conditional puts writes the forward rows (string -> UID,
//     expecting none);
//  4. one multi-get reads the forward rows whose put did not apply: a row
//     holding our own UID means an earlier attempt of the same put applied
//     (a retry after a lost reply), and we won; another UID means another
//     writer won, and its UID is the string's (ours is wasted, counted).
//
// The answer has one UID per name; 0 for a name that needs a UID beyond the
// kind's width (the space is used up).
func (r *Resolver) assignKind(ctx context.Context, kind Kind, names []string) ([]uint64, error) {
	q := qualifiers[kind]
	w := r.widths[kind]
	hi, err := r.tbl.Increment(ctx, counterRow, FamilyID, q, int64(len(names)))
	if err != nil {
		return nil, fmt.Errorf("reserve %d %s UIDs: increment counter: %w", len(names), kind, err)
	}
	uids, usable := r.reserved(kind, hi, len(names))
	if usable == 0 {
		return uids, nil
	}
	reverse := make([]table.Cell, usable)
	puts := make([]table.CondPut, usable)
	for i := range usable {
		uidb := AppendUID(make([]byte, 0, w), uids[i], w)
		nameb := []byte(names[i])
		reverse[i] = table.Cell{Row: uidb, Family: FamilyName, Qualifier: q, Timestamp: table.LatestTimestamp, Value: nameb}
		puts[i] = table.CondPut{Row: nameb, Family: FamilyID, Qualifier: q, Put: []table.Cell{{
			Row: nameb, Family: FamilyID, Qualifier: q, Timestamp: table.LatestTimestamp, Value: uidb,
		}}}
	}
	if err := r.tbl.Put(ctx, reverse); err != nil {
		return nil, fmt.Errorf("assign %d %s UIDs from %d: write reverse mappings: %w", usable, kind, uids[0], err)
	}
	written, err := r.tbl.CheckAndPutBatch(ctx, puts)
	if err != nil {
		// Some forward rows may be written: the reverse rows stay, so each
		// one that was is resolvable; a later lookup finds them.
		return nil, fmt.Errorf("assign %d %s UIDs from %d: write forward mappings: %w", usable, kind, uids[0], err)
	}
	if err := r.settleLosers(ctx, kind, uids, puts, written); err != nil {
		return nil, err
	}
	return uids, nil
}

// reserved turns the counter value after an increment by n into the n UIDs
// reserved, zero from the first one that does not fit the kind's width, and
// says how many fit. Running out is logged and shown on the gauge.
func (r *Resolver) reserved(kind Kind, hi int64, n int) ([]uint64, int) {
	maxUID := MaxUID(r.widths[kind])
	uids := make([]uint64, n)
	usable := 0
	for i := range uids {
		uid := uint64(hi) - uint64(n) + 1 + uint64(i)
		if hi <= 0 || uid > maxUID {
			break
		}
		uids[i] = uid
		usable++
	}
	r.setRemaining(kind, min(uint64(max(hi, 0)), maxUID))
	if usable < n {
		r.wasted.WithLabelValues(kind.String()).Add(float64(n - usable))
		r.noteExhausted(kind, n-usable)
	}
	return uids, usable
}

// settleLosers resolves the forward puts that did not apply (see
// assignKind, step 4), replacing uids[i] by the winner's UID where another
// writer won, and removes the reverse rows of the UIDs so wasted. A reverse
// row is removed only when the forward row names another UID: forward rows
// never change once written, so no data row can use it.
func (r *Resolver) settleLosers(ctx context.Context, kind Kind, uids []uint64, puts []table.CondPut, written []bool) error {
	var lost []int
	var keys [][]byte
	for i, ok := range written {
		if !ok {
			lost = append(lost, i)
			keys = append(keys, puts[i].Row)
		}
	}
	if len(lost) == 0 {
		r.assigned.WithLabelValues(kind.String()).Add(float64(len(written)))
		return nil
	}
	rows, err := r.tbl.Get(ctx, FamilyID, keys)
	if err != nil {
		return fmt.Errorf("assign %s UIDs: read %d forward mappings that lost a race: %w", kind, len(keys), err)
	}
	q := qualifiers[kind]
	var drop []table.Cell
	for j, i := range lost {
		c := findCell(rows[j], q)
		if c == nil {
			return fmt.Errorf("assign %s UID to %q: conditional put refused, yet no forward mapping is there", kind, puts[i].Row)
		}
		if bytes.Equal(c.Value, puts[i].Put[0].Value) {
			continue // an earlier attempt of our own put applied
		}
		won, err := r.decode(kind, c.Value)
		if err != nil {
			return fmt.Errorf("forward mapping of %s %q: %w", kind, puts[i].Row, err)
		}
		drop = append(drop, table.Cell{Row: puts[i].Put[0].Value, Family: FamilyName, Qualifier: q})
		uids[i] = won
	}
	r.assigned.WithLabelValues(kind.String()).Add(float64(len(written) - len(drop)))
	r.wasted.WithLabelValues(kind.String()).Add(float64(len(drop)))
	if len(drop) > 0 {
		if err := r.tbl.Delete(ctx, drop); err != nil {
			r.logger.Warn("could not remove the reverse mappings of UIDs lost in races; they are unused and harmless",
				"kind", kind.String(), "count", len(drop), "err", err)
		}
	}
	return nil
}

// exhaustedLogEvery spaces the log lines of a kind whose UIDs ran out: every
// request that needs a new one would log otherwise.
const exhaustedLogEvery = time.Minute

func (r *Resolver) noteExhausted(kind Kind, refused int) {
	now := time.Now().UnixNano()
	last := r.exhaustedLogged[kind].Load()
	if now-last < int64(exhaustedLogEvery) || !r.exhaustedLogged[kind].CompareAndSwap(last, now) {
		return
	}
	w := r.widths[kind]
	r.logger.Error("UID space used up: series that need a new UID of this kind are refused with 400",
		"kind", kind.String(), "width_bytes", w, "max_uid", MaxUID(w), "refused_strings", refused,
		"help", "the UID widths are fixed when the tables are created; see docs/operations.md")
}

// ExhaustedError describes, for a string of kind left without a UID by
// GetOrAssign, why: it wraps ErrExhausted.
func (r *Resolver) ExhaustedError(kind Kind) error {
	w := r.widths[kind]
	return fmt.Errorf("all %d-byte %s UIDs are assigned: %w", w, kind, ErrExhausted)
}

// Exhausted reports, after GetOrAssign, whether Names[kind][i] was left
// without a UID because its kind's UID space is used up.
func (b *Batch) Exhausted(kind Kind, i int) bool { return !b.Found[kind][i] }
