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

// checkUIDsFlags are the check-uids command's flags.
type checkUIDsFlags struct {
	log promslog.Config
	storageFlags
	fix       bool
	data      bool
	maxListed int
}

func parseCheckUIDsFlags(args []string) (*checkUIDsFlags, error) {
	app := kingpin.New("adapter check-uids", "Check the UID table: that every forward mapping (string -> UID) has its reverse mapping (UID -> string), that no UID names two strings, and that no UID in use is above its kind's counter, as OpenTSDB's `uid fsck` does; with --data, also the UIDs the data table's rows use. It reads the whole UID table once. Safe while adapters write to HBase; the embedded store must be stopped first (one process opens it). Exit status 0 when nothing harmful is left, 1 otherwise.")
	app.HelpFlag.Short('h')
	f := &checkUIDsFlags{}
	promslogflag.AddFlags(app, &f.log)
	addBackendFlags(app, &f.storageFlags)
	app.Flag("fix", "Repair what can be repaired: write missing and wrong reverse mappings from their forward mappings (forward mappings are what writes use, and never change), and advance a counter past the UIDs in use. UIDs shared by two strings, malformed cells and strings with a second UID are reported only.").
		BoolVar(&f.fix)
	app.Flag("data", "Also read every row key of the data table (keys only, before the UID table) and check the UIDs the rows use: each must be named, by the forward mapping of the string its reverse mapping names, and below its kind's counter. Run it after restoring tables from snapshots, before starting adapters. With --fix it also writes lost forward mappings back from their reverse mappings where the string has none. It costs a scan of the data table.").
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

func runCheckUIDs(args []string) int {
	f, err := parseCheckUIDsFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter check-uids:", err)
		return 2
	}
	logger := promslog.New(&f.log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if f.zkQuorum == "" {
		// Opening a path that holds no store would create one.
		if _, err := os.Stat(f.storagePath); err != nil {
			logger.Error("check-uids could not start: no embedded store there", "err", err)
			return 1
		}
	}
	db, err := openDB(ctx, &f.storageFlags, logger)
	if err != nil {
		logger.Error("check-uids could not start", "err", err)
		return 1
	}
	defer db.Close()
	began := time.Now()
	res, err := store.CheckUIDs(ctx, db, f.tablePrefix, f.data, labels2uid.CheckOptions{Fix: f.fix, MaxListed: f.maxListed, Logger: logger})
	if err != nil {
		logger.Error("check-uids failed", "err", err)
		return 1
	}
	if f.data {
		fmt.Printf("data table %s: %d rows read", f.tablePrefix+store.DataTableSuffix, res.DataRows)
		if res.BadDataKeys > 0 {
			fmt.Printf(", %d with a key that does not parse in the tables' layout", res.BadDataKeys)
		}
		fmt.Println()
	}
	printCheckReport(os.Stdout, f.tablePrefix+store.UIDTableSuffix, res.CheckReport, f.data, f.maxListed, time.Since(began))
	if res.Unfixed() > 0 || res.BadDataKeys > 0 {
		return 1
	}
	return 0
}

// printCheckReport writes what a check found: the rows of each kind, the
// findings, and a last line that says whether anything harmful is left.
func printCheckReport(w io.Writer, table string, rep *labels2uid.CheckReport, withData bool, maxListed int, took time.Duration) {
	fmt.Fprintf(w, "UID table %s: %d cells read in %s\n\n", table, rep.Cells, took.Round(time.Millisecond))
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
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(w, f)
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
		} else if p == labels2uid.SecondUID {
			what = "see docs/operations.md"
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
	switch left := rep.Unfixed(); {
	case !found:
		fmt.Fprintln(w, "no problems found")
	case left == 0:
		fmt.Fprintln(w, "nothing harmful left")
	default:
		fmt.Fprintf(w, "%d harmful problems left\n", left)
	}
}
