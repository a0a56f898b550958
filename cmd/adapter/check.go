package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/store"
)

// checkFlags are the check command's flags.
type checkFlags struct {
	log promslog.Config
	storageFlags
	fix       bool
	data      bool
	maxListed int
}

func parseCheckFlags(args []string) (*checkFlags, error) {
	app := kingpin.New("adapter check", "Check the tables. The UID table: that every forward mapping (string -> UID) has its reverse mapping (UID -> string), that no UID names two strings, and that no UID in use is above its kind's counter, as OpenTSDB's `uid fsck` does. With --data, the data table too: the UIDs its rows use, and that the compaction table marks every hour whose rows hold raw cells. It reads the whole UID table once. Safe while adapters write to HBase; the embedded store must be stopped first (one process opens it). Exit status 0 when nothing harmful is left, 1 otherwise.")
	app.HelpFlag.Short('h')
	f := &checkFlags{}
	promslogflag.AddFlags(app, &f.log)
	addBackendFlags(app, &f.storageFlags)
	app.Flag("fix", "Repair what can be repaired: write missing and wrong reverse mappings from their forward mappings (forward mappings are what writes use, and never change), and advance a counter past the UIDs in use. UIDs shared by two strings, malformed cells and strings with a second UID are reported only.").
		BoolVar(&f.fix)
	app.Flag("data", "Also read every row key of the data table (keys only, before the UID table) and check the UIDs the rows use: each must be named, by the forward mapping of the string its reverse mapping names, and below its kind's counter; and read the row keys of its raw family, each of whose bucket-hours a compaction mark must cover (reads and compactors skip raw cells no mark covers). Run it after restoring tables from snapshots, before starting adapters. With --fix it also writes lost forward mappings back from their reverse mappings where the string has none, and the missing marks. It costs a scan of the data table's keys.").
		BoolVar(&f.data)
	app.Flag("max-listed", "Findings of each problem listed (all are counted).").
		Default("100").IntVar(&f.maxListed)
	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	if f.maxListed < 1 {
		return nil, fmt.Errorf("--max-listed=%d: at least 1", f.maxListed)
	}
	return f, nil
}

func runCheck(args []string) int {
	f, err := parseCheckFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter check:", err)
		return 2
	}
	logger := promslog.New(&f.log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if f.zkQuorum == "" {
		// Opening a path that holds no store would create one.
		if _, err := os.Stat(f.storagePath); err != nil {
			logger.Error("check could not start: no embedded store there", "err", err)
			return 1
		}
	}
	db, err := openDB(ctx, &f.storageFlags, logger)
	if err != nil {
		logger.Error("check could not start", "err", err)
		return 1
	}
	defer db.Close()
	began := time.Now()
	res, err := store.CheckTables(ctx, db, f.tablePrefix, f.data, labels2uid.CheckOptions{Fix: f.fix, MaxListed: f.maxListed, Logger: logger})
	if err != nil {
		logger.Error("check failed", "err", err)
		return 1
	}
	printCheck(os.Stdout, f.tablePrefix, res, f.data, f.maxListed, time.Since(began))
	if res.Harmful() > 0 {
		return 1
	}
	return 0
}

// printCheck writes what a check found: the rows read, the findings, and a
// last line that says whether anything harmful is left.
func printCheck(w io.Writer, prefix string, res *store.TableCheck, withData bool, maxListed int, took time.Duration) {
	rep := res.CheckReport
	if withData {
		fmt.Fprintf(w, "data table %s: %d rows read, %d with raw cells", prefix+store.DataTableSuffix, res.DataRows, res.RawRows)
		if res.BadDataKeys > 0 {
			fmt.Fprintf(w, ", %d with a key that does not parse in the tables' layout", res.BadDataKeys)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "UID table %s: %d cells read; %s in all\n\n", prefix+store.UIDTableSuffix, rep.Cells, took.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tforward rows\treverse rows\tUIDs in data rows\tcounter\thighest UID in use\t")
	for k := range labels2uid.Kind(labels2uid.NumKinds) {
		s := rep.Kinds[k]
		inData := "-"
		if withData {
			inData = fmt.Sprint(s.InData)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t\n", k, s.Forward, s.Reverse, inData, s.Counter, s.MaxUID)
	}
	tw.Flush()
	if len(rep.Findings) > 0 || len(res.Unmarked) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(w, f)
	}
	for i, bh := range res.Unmarked {
		if i == maxListed {
			break
		}
		fixed := ""
		if res.MarksFixed {
			fixed = " (marked)"
		}
		fmt.Fprintf(w, "raw cells without a compaction mark: %s%s\n", bh, fixed)
	}
	fmt.Fprintln(w)
	found := false
	for p := range labels2uid.Problem(len(rep.Counts)) {
		n := rep.Counts[p]
		if n == 0 {
			continue
		}
		found = true
		what := "harmless"
		if p.Harmful() {
			what = "harmful"
		} else if p == labels2uid.SecondUID && !withData {
			what = "harmless unless data rows use it: --data tells"
		}
		line := fmt.Sprintf("%d %s (%s)", n, p, what)
		if rep.Fixed[p] > 0 {
			line += fmt.Sprintf(", %d fixed", rep.Fixed[p])
		}
		if n > maxListed {
			line += fmt.Sprintf(", %d not listed", n-maxListed)
		}
		fmt.Fprintln(w, line)
	}
	if n := len(res.Unmarked); n > 0 {
		found = true
		line := fmt.Sprintf("%d bucket-hours of raw cells without a compaction mark (harmful: reads and the compactor skip them)", n)
		if res.MarksFixed {
			line += ", all marked"
		}
		if n > maxListed {
			line += fmt.Sprintf(", %d not listed", n-maxListed)
		}
		fmt.Fprintln(w, line)
	}
	switch left := res.Harmful(); {
	case !found && res.BadDataKeys == 0:
		fmt.Fprintln(w, "no problems found")
	case left == 0:
		fmt.Fprintln(w, "nothing harmful left")
	default:
		fmt.Fprintf(w, "%d harmful problems left\n", left)
	}
}
