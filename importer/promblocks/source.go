package promblocks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/prom-hbase/prom-hbase/importer"
)

// DefaultPieceSamples is the samples of a piece of a long series, when
// Options leave it 0: an hour at one sample a second, twice over.
const DefaultPieceSamples = 8192

// Options say where the blocks are and what of them to import.
type Options struct {
	// Dir is a Prometheus data directory, a snapshot, or one block.
	Dir string
	// Matchers select the series: a series is imported when any set
	// matches it; none imports every series.
	Matchers [][]*labels.Matcher
	// MinTime and MaxTime bound the samples imported (milliseconds,
	// inclusive); 0 leaves that end open.
	MinTime, MaxTime int64
	// PieceSamples is the size of a series' pieces (0: DefaultPieceSamples).
	PieceSamples int
	// Logger receives what tsdb logs and the source's warnings (nil:
	// slog.Default()).
	Logger *slog.Logger
}

// Source reads the blocks of a directory. It is safe for concurrent use:
// units are read in parallel.
type Source struct {
	opts       Options
	mint, maxt int64
	units      []unit
}

// unit is a group of blocks whose time ranges overlap.
type unit struct {
	importer.Unit
	blocks []blockInfo
}

type blockInfo struct {
	dir   string
	meta  tsdb.BlockMeta
	bytes int64
}

var (
	_ importer.Source   = (*Source)(nil)
	_ importer.Selector = (*Source)(nil)
)

// New finds the blocks under opts.Dir (reading only their meta.json) and
// groups them into units.
func New(opts Options) (*Source, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PieceSamples <= 0 {
		opts.PieceSamples = DefaultPieceSamples
	}
	s := &Source{opts: opts, mint: opts.MinTime, maxt: opts.MaxTime}
	if s.mint == 0 {
		s.mint = math.MinInt64
	}
	if s.maxt == 0 {
		s.maxt = math.MaxInt64
	}
	if s.mint > s.maxt {
		return nil, fmt.Errorf("promblocks: min time %d after max time %d", s.mint, s.maxt)
	}
	blocks, err := findBlocks(opts.Dir)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("promblocks: no TSDB block (a directory with a meta.json) in %s: name a Prometheus data directory, a snapshot under its snapshots/, or a block", opts.Dir)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "wal")); err == nil {
		opts.Logger.Warn("the head of this data directory (its WAL, the last hours) is in no block and is not imported; a snapshot (POST /api/v1/admin/tsdb/snapshot) writes it as one", "dir", opts.Dir)
	}
	s.units = s.group(blocks)
	return s, nil
}

// findBlocks reads the meta.json of dir, or of its sub-directories.
func findBlocks(dir string) ([]blockInfo, error) {
	if b, ok, err := readBlock(dir); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return []blockInfo{b}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("promblocks: %w", err)
	}
	var out []blockInfo
	for _, e := range entries {
		// Prometheus's directories being written or deleted end in
		// .tmp-for-creation and .tmp-for-deletion: not ULIDs.
		if !e.IsDir() || !isULID(e.Name()) {
			continue
		}
		b, ok, err := readBlock(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, b)
		}
	}
	return out, nil
}

func isULID(name string) bool {
	_, err := ulid.ParseStrict(name)
	return err == nil
}

// readBlock reads a block's meta.json and sums its files; ok is false when
// dir holds no meta.json.
func readBlock(dir string) (b blockInfo, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("promblocks: %w", err)
	}
	meta, err := parseMeta(raw)
	if err != nil {
		return b, false, fmt.Errorf("promblocks: block %s: %w", dir, err)
	}
	b = blockInfo{dir: dir, meta: meta}
	err = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			b.bytes += fi.Size()
		}
		return err
	})
	if err != nil {
		return b, false, fmt.Errorf("promblocks: block %s: %w", dir, err)
	}
	return b, true, nil
}

// parseMeta decodes a meta.json and checks what the source relies on.
func parseMeta(raw []byte) (tsdb.BlockMeta, error) {
	var m tsdb.BlockMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("meta.json: %w", err)
	}
	switch {
	case m.Version != 1:
		return m, fmt.Errorf("meta.json: version %d, only 1 is known", m.Version)
	case m.ULID == ulid.ULID{}:
		return m, errors.New("meta.json: no ULID")
	case m.MinTime >= m.MaxTime:
		return m, fmt.Errorf("meta.json: minTime %d not before maxTime %d", m.MinTime, m.MaxTime)
	}
	return m, nil
}

// group sorts the blocks by time and joins those whose ranges overlap into
// one unit; units outside the time range are left out.
func (s *Source) group(blocks []blockInfo) []unit {
	slices.SortFunc(blocks, func(a, b blockInfo) int {
		return cmp.Or(cmp.Compare(a.meta.MinTime, b.meta.MinTime), strings.Compare(a.meta.ULID.String(), b.meta.ULID.String()))
	})
	var units []unit
	var end int64 // exclusive end of the current unit's blocks
	for _, b := range blocks {
		if len(units) > 0 && b.meta.MinTime < end {
			u := &units[len(units)-1]
			u.blocks = append(u.blocks, b)
			end = max(end, b.meta.MaxTime)
			continue
		}
		units = append(units, unit{blocks: []blockInfo{b}})
		end = b.meta.MaxTime
	}
	out := units[:0]
	for _, u := range units {
		if s.describe(&u) {
			out = append(out, u)
		}
	}
	return out
}

// describe fills in the importer's view of a unit; false when the unit
// holds nothing of the time range.
func (s *Source) describe(u *unit) bool {
	ids := make([]string, len(u.blocks))
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	var series, samples, bytes int64
	for i, b := range u.blocks {
		ids[i] = b.meta.ULID.String()
		mint, maxt = min(mint, b.meta.MinTime), max(maxt, b.meta.MaxTime-1) // block ends are exclusive
		series += int64(b.meta.Stats.NumSeries)
		samples += int64(b.meta.Stats.NumSamples)
		bytes += b.bytes
	}
	slices.Sort(ids)
	lo, hi := max(mint, s.mint), min(maxt, s.maxt)
	if lo > hi {
		return false
	}
	// A time range that cuts the unit cuts its samples about as much;
	// what matchers leave of it is unknown.
	if span := float64(maxt - mint + 1); float64(hi-lo+1) < span {
		samples = int64(float64(samples) * float64(hi-lo+1) / span)
	}
	if len(s.opts.Matchers) > 0 {
		series, samples = 0, 0
	}
	u.Unit = importer.Unit{ID: strings.Join(ids, "+"), MinTime: lo, MaxTime: hi, Series: series, Samples: samples, Bytes: bytes}
	return true
}

// Units lists the units, oldest first.
func (s *Source) Units(context.Context) ([]importer.Unit, error) {
	out := make([]importer.Unit, len(s.units))
	for i, u := range s.units {
		out[i] = u.Unit
	}
	return out, nil
}

// Matchers are the selection, for verification.
func (s *Source) Matchers() [][]*labels.Matcher { return s.opts.Matchers }

// Close releases nothing: blocks are opened per unit.
func (s *Source) Close() error { return nil }

// Open opens the unit's blocks and iterates over their series, merged.
func (s *Source) Open(ctx context.Context, u importer.Unit) (importer.SeriesIterator, error) {
	i := slices.IndexFunc(s.units, func(x unit) bool { return x.ID == u.ID })
	if i < 0 {
		return nil, fmt.Errorf("promblocks: %q is not a unit of %s", u.ID, s.opts.Dir)
	}
	return openSeries(ctx, s.units[i], s.opts)
}
