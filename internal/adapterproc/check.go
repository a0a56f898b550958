package adapterproc

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Check runs `adapter check --data` (bin) on the tables of prefix in the
// HBase that zk and zkRoot name, as an operator would, and returns its
// report. It fails when the command does, which it does when it finds a
// problem, or when the report lacks its table of UIDs (the check did not
// get that far).
func Check(ctx context.Context, bin, zk, zkRoot, prefix string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "check", "--data", "--log.level=warn", "--hbase.zookeeper-quorum="+zk,
		"--hbase.zookeeper-root="+zkRoot, "--hbase.table-prefix="+prefix).CombinedOutput()
	if err == nil && !strings.Contains(string(out), "UIDs in data rows") {
		err = fmt.Errorf("no UID table in the report")
	}
	if err != nil {
		return string(out), fmt.Errorf("adapter check --data on %s: %w", prefix, err)
	}
	return string(out), nil
}
