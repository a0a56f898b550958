// Package deps pins the project's dependencies while the packages that use
// them are being written. Removed once they all have users.
package deps

import (
	_ "github.com/alecthomas/kingpin/v2"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/go-zookeeper/zk"
	_ "github.com/gogo/protobuf/proto"
	_ "github.com/golang/snappy"
	_ "github.com/klauspost/compress/snappy"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/common/promslog"
	_ "github.com/prometheus/exporter-toolkit/web"
	_ "github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/prompb"
	_ "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	_ "github.com/prometheus/prometheus/storage/remote"
	_ "github.com/prometheus/prometheus/tsdb/chunkenc"
	_ "google.golang.org/protobuf/proto"
)
