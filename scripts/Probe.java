import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/** Readiness probe for scripts/hbase.sh: a real client call, independent of the Go client. */
public class Probe {
  public static void main(String[] args) throws Exception {
    String[] hp = args[0].split(":");
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", hp[0]);
    conf.set("hbase.zookeeper.property.clientPort", hp[1]);
    conf.setInt("hbase.client.retries.number", 1);
    conf.setInt("hbase.client.operation.timeout", 5000);
    conf.setInt("zookeeper.recovery.retry", 0);
    try (Connection c = ConnectionFactory.createConnection(conf);
        Admin a = c.getAdmin();
        Table meta = c.getTable(TableName.META_TABLE_NAME);
        ResultScanner s = meta.getScanner(new Scan().setLimit(1))) {
      if (!a.isMasterInMaintenanceMode() && a.listTableNames().length >= 0) {
        Result r = s.next();
        System.exit(r == null ? 1 : 0);
      }
    }
    System.exit(1);
  }
}
