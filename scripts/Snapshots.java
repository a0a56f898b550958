import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

/**
 * HBase table snapshots for scripts/hbase.sh, through HBase's own Admin API (what the
 * HBase shell's snapshot, restore_snapshot and delete_snapshot call). After the
 * ZooKeeper address, any number of commands, run in order on one connection (a JVM
 * takes seconds to start):
 *
 *   snapshot TABLE NAME
 *   restore NAME TABLE   (disables the table, restores it, enables it)
 *   delete NAME
 */
public class Snapshots {
  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      usage();
    }
    String[] hp = args[0].split(":");
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", hp[0]);
    conf.set("hbase.zookeeper.property.clientPort", hp[1]);
    try (Connection c = ConnectionFactory.createConnection(conf); Admin a = c.getAdmin()) {
      for (int i = 1; i < args.length; ) {
        String cmd = args[i];
        if (cmd.equals("snapshot") && i + 2 < args.length) {
          a.snapshot(args[i + 2], TableName.valueOf(args[i + 1]));
          i += 3;
        } else if (cmd.equals("restore") && i + 2 < args.length) {
          TableName t = TableName.valueOf(args[i + 2]);
          if (a.isTableEnabled(t)) {
            a.disableTable(t);
          }
          a.restoreSnapshot(args[i + 1]);
          a.enableTable(t);
          i += 3;
        } else if (cmd.equals("delete") && i + 1 < args.length) {
          a.deleteSnapshot(args[i + 1]);
          i += 2;
        } else {
          usage();
        }
      }
    }
  }

  private static void usage() {
    System.err.println("usage: Snapshots ZK_HOST:PORT COMMAND...; commands: snapshot TABLE NAME | restore NAME TABLE | delete NAME");
    System.exit(2);
  }
}
