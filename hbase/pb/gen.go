// Package pb holds the Go types generated from this client's own subset of
// HBase 2.x's protocol buffers (the .proto files next to this one). It owns
// the wire messages only: no behaviour, no knowledge of how calls travel.
//
// Regenerate with `go generate ./hbase/pb` after editing a .proto file.
package pb

//go:generate sh -c "protoc --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --go_out=. --go_opt=paths=source_relative -I . *.proto"
