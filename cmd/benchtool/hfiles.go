package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// openTSDBFamilies is what OpenTSDB 2.4's src/create_table.sh creates, with
// its default COMPRESSION=NONE.
var openTSDBFamilies = []struct {
	suffix   string
	families []string
	versions int
}{
	{"tsdb-uid", []string{"id", "name"}, 0},
	{"tsdb", []string{"t"}, 1},
	{"tsdb-tree", []string{"t"}, 1},
	{"tsdb-meta", []string{"name"}, 0},
}

func runOTSDBTables(args []string) error {
	fs := flag.NewFlagSet("otsdb-tables", flag.ExitOnError)
	zk := fs.String("zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	prefix := fs.String("prefix", "", "table name prefix (tables <prefix>tsdb, <prefix>tsdb-uid, ...)")
	_ = fs.Parse(args)
	c := hbase.New(hbase.Config{ZooKeeper: *zk})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, t := range openTSDBFamilies {
		var fams []hrpc.Family
		for _, f := range t.families {
			fams = append(fams, hrpc.Family{Name: f, MaxVersions: t.versions, BloomFilter: "ROW",
				DataBlockEncoding: "DIFF", Compression: "NONE"})
		}
		name := *prefix + t.suffix
		err := c.CreateTable(ctx, name, fams, nil)
		var x *hbase.Exception
		if errors.As(err, &x) && x.Class == hrpc.TableExists {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tableFlags are the flags of the subcommands that look at tables' files.
type tableFlags struct {
	zk, root    string
	compression string
	tables      []string
}

// parseTableFlags parses the flags every such subcommand has, and those
// that more registers on the same set.
func parseTableFlags(name string, args []string, more ...func(*flag.FlagSet, *tableFlags)) tableFlags {
	var tf tableFlags
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	fs.StringVar(&tf.zk, "zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	fs.StringVar(&tf.root, "root", "", "HBase root directory on the local file system (hbase.rootdir without file://)")
	for _, m := range more {
		m(fs, &tf)
	}
	_ = fs.Parse(args)
	tf.tables = fs.Args()
	return tf
}

// setCompression sets every family of table to the block compression
// codec, keeping the rest of each family's descriptor.
func setCompression(ctx context.Context, c *hbase.Client, table, codec string) error {
	fams, err := c.TableFamilies(ctx, table)
	if err != nil {
		return err
	}
	for _, f := range fams {
		f.Compression = codec
		if err := c.ModifyFamily(ctx, table, f); err != nil {
			return err
		}
	}
	return nil
}

// runCompact flushes and major-compacts each table, waits until the
// compacted files are the only live ones, and prints their bytes.
func runCompact(args []string) error {
	tf := parseTableFlags("compact", args, func(fs *flag.FlagSet, tf *tableFlags) {
		fs.StringVar(&tf.compression, "compression", "", "first set every family of the tables to this COMPRESSION (the major compaction rewrites the files with it)")
	})
	c := hbase.New(hbase.Config{ZooKeeper: tf.zk})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, t := range tf.tables {
		if tf.compression != "" {
			if err := setCompression(ctx, c, t, tf.compression); err != nil {
				return err
			}
		}
		if err := c.FlushTable(ctx, t); err != nil {
			return err
		}
	}
	// Files written from here on are the major compaction's output; the
	// files it replaced linger until HBase's discharger chore removes them.
	time.Sleep(1100 * time.Millisecond)
	since := time.Now()
	for _, t := range tf.tables {
		if err := c.MajorCompactTable(ctx, t); err != nil {
			return err
		}
	}
	for _, t := range tf.tables {
		n, err := waitCompacted(ctx, tf.root, t, since)
		if err != nil {
			return err
		}
		fmt.Printf("table=%s hfile_bytes=%d\n", t, n)
	}
	return nil
}

// runFlush flushes each table, waits until none of its regions compacts
// (the adapter's compactor may have queued a compaction of its raw family),
// and prints the bytes of the store files its region servers list: the
// state of the disk between HBase's major compactions, which run weekly.
func runFlush(args []string) error {
	tf := parseTableFlags("flush", args)
	c := hbase.New(hbase.Config{ZooKeeper: tf.zk})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, t := range tf.tables {
		if err := c.FlushTable(ctx, t); err != nil {
			return err
		}
		// A compaction may be queued but not yet running: quiet twice in a row.
		for quiet := 0; quiet < 2; {
			busy, err := c.Compacting(ctx, t)
			if err != nil {
				return err
			}
			if quiet++; busy {
				quiet = 0
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: compactions still running: %w", t, ctx.Err())
			case <-time.After(time.Second):
			}
		}
		fams, err := c.TableFamilies(ctx, t)
		if err != nil {
			return err
		}
		var total int64
		for _, f := range fams {
			files, err := c.StoreFiles(ctx, t, f.Name)
			if err != nil {
				return err
			}
			for _, name := range files {
				fi, err := os.Stat(strings.TrimPrefix(name, "file:"))
				if err != nil {
					return fmt.Errorf("%s: store file %s (HBase on this machine's file system only): %w", t, name, err)
				}
				total += fi.Size()
			}
		}
		fmt.Printf("table=%s hfile_bytes=%d\n", t, total)
	}
	return nil
}

func runDU(args []string) error {
	tf := parseTableFlags("du", args)
	for _, t := range tf.tables {
		n, err := liveBytes(tf.root, t, time.Time{})
		if err != nil {
			return err
		}
		fmt.Printf("table=%s hfile_bytes=%d\n", t, n)
	}
	return nil
}

func waitCompacted(ctx context.Context, root, table string, since time.Time) (int64, error) {
	for {
		n, err := liveBytes(root, table, since)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, errNotCompacted) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s: %w", table, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

var errNotCompacted = errors.New("major compaction output not there yet")

// liveBytes sums, per store (region x family) of table, the bytes of the
// store file written at or after since (the newest one). A zero
// since takes every file. Files HBase keeps beside the HFiles (.regioninfo,
// checksums, recovered edits, .tmp) are not counted.
func liveBytes(root, table string, since time.Time) (int64, error) {
	ns, name := "default", table
	if i := strings.IndexByte(table, ':'); i >= 0 {
		ns, name = table[:i], table[i+1:]
	}
	dir := filepath.Join(root, "data", ns, name)
	regions, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", table, err)
	}
	var total int64
	for _, r := range regions {
		if !r.IsDir() || strings.HasPrefix(r.Name(), ".") {
			continue
		}
		fams, err := os.ReadDir(filepath.Join(dir, r.Name()))
		if err != nil {
			return 0, err
		}
		for _, f := range fams {
			if !f.IsDir() || strings.HasPrefix(f.Name(), ".") || f.Name() == "recovered.edits" {
				continue
			}
			n, err := storeBytes(filepath.Join(dir, r.Name(), f.Name()), since)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

func storeBytes(dir string, since time.Time) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var all, newest int64
	var newestAt time.Time
	files := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return 0, err
		}
		files++
		all += fi.Size()
		if !fi.ModTime().Before(since) && fi.ModTime().After(newestAt) {
			newest, newestAt = fi.Size(), fi.ModTime()
		}
	}
	// A major compaction may leave a store of one file as it is; accept an
	// old single file once a rewrite had ample time to show up.
	switch {
	case since.IsZero() || files == 0:
		return all, nil
	case !newestAt.IsZero():
		return newest, nil
	case files == 1 && time.Since(since) > 10*time.Second:
		return all, nil
	}
	return 0, fmt.Errorf("%s: %d files: %w", dir, files, errNotCompacted)
}

// runDrop disables and deletes the tables of the default namespace whose
// names start with -prefix, found in the root directory: a run's tables
// on an HBase that outlives it.
func runDrop(args []string) error {
	fs := flag.NewFlagSet("drop", flag.ExitOnError)
	zk := fs.String("zk", os.Getenv("PROMHBASE_TEST_ZK"), "ZooKeeper quorum of the HBase")
	root := fs.String("root", "", "HBase root directory on the local file system")
	prefix := fs.String("prefix", "", "drop the tables whose names start with this (required)")
	_ = fs.Parse(args)
	if *prefix == "" || *root == "" {
		return errors.New("-prefix and -root are required")
	}
	entries, err := os.ReadDir(filepath.Join(*root, "data", "default"))
	if err != nil {
		return err
	}
	c := hbase.New(hbase.Config{ZooKeeper: *zk})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), *prefix) {
			continue
		}
		if err := c.DisableTable(ctx, e.Name()); err != nil && !hbase.IsTableNotFound(err) {
			return err
		}
		if err := c.DeleteTable(ctx, e.Name()); err != nil && !hbase.IsTableNotFound(err) {
			return err
		}
		fmt.Printf("dropped table=%s\n", e.Name())
	}
	return nil
}
