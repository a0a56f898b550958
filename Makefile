# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test build lint generate bench hbase-start hbase-stop

run:
	go run ./cmd/adapter

build:
	go build -o bin/adapter ./cmd/adapter

# Every test: static checks, unit tests, the storage conformance suite and the
# HBase client tests against a real HBase, and the end-to-end suite with a real
# Prometheus. Starts and stops everything it needs.
test:
	scripts/test.sh

lint:
	scripts/lint.sh

generate:
	go generate ./...

hbase-start:
	scripts/hbase.sh start

hbase-stop:
	scripts/hbase.sh stop
