import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;

/**
 * The image's health check: healthy only when a client can do what the adapter
 * needs first, through the addresses HBase advertises. It finds the master
 * through ZooKeeper, asks it for the table list (the master serves RPCs and is
 * not initializing), and reads a row of hbase:meta from the region server (meta
 * is assigned and the advertised host name resolves). Any failure exits 1.
 *
 * Usage: java HealthCheck [zookeeper-host:port]
 */
public final class HealthCheck {
  public static void main(String[] args) {
    String quorum = args.length > 0 ? args[0] : "127.0.0.1:2181";
    int colon = quorum.lastIndexOf(':');
    Configuration conf = HBaseConfiguration.create();
    conf.set("hbase.zookeeper.quorum", quorum.substring(0, colon));
    conf.set("hbase.zookeeper.property.clientPort", quorum.substring(colon + 1));
    // One attempt, bounded in time: Docker runs the check again anyway.
    conf.setInt("hbase.client.retries.number", 1);
    conf.setInt("hbase.client.operation.timeout", 8000);
    conf.setInt("hbase.rpc.timeout", 5000);
    conf.setInt("zookeeper.recovery.retry", 0);
    try (Connection conn = ConnectionFactory.createConnection(conf);
        Admin admin = conn.getAdmin();
        Table meta = conn.getTable(TableName.META_TABLE_NAME);
        ResultScanner rows = meta.getScanner(new Scan().setLimit(1))) {
      if (admin.isMasterInMaintenanceMode()) {
        fail("master is in maintenance mode");
      }
      int tables = admin.listTableNames().length;
      if (rows.next() == null) {
        fail("hbase:meta has no rows");
      }
      System.out.println("healthy: master serves, meta readable, " + tables + " user tables");
      System.exit(0);
    } catch (Exception e) {
      fail(e.toString());
    }
  }

  private static void fail(String why) {
    System.out.println("unhealthy: " + why);
    System.exit(1);
  }
}
