#!/bin/sh
# Docker HEALTHCHECK of the HBase image: a real client call (HealthCheck.java)
# through the ZooKeeper of this container. A small, quickly started JVM: it
# runs every interval for the container's whole life.
exec java -Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
  -Dlog4j.configuration=file:/opt/hbase/healthcheck-log4j.properties \
  -cp "/opt/hbase/classes:/opt/hbase/lib/*" HealthCheck "127.0.0.1:2181"
