# The two commands a newcomer needs: `make run` and `make test`.
.PHONY: run test build lint generate bench hbase-start hbase-stop

run:
	go run ./cmd/adapter

build:
	go build -o bin/adapter ./cmd/adapter

# Every test: static checks, unit tests, the storage conformance suite and the
# HBase client tests against a real HBase, the end-to-end suite with a real
# Prometheus, and the fault tests on a two-region-server HBase (test-faults).
# Starts and stops everything it needs.
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

# The adapter against OpenTSDB 2.4.1 and Prometheus on the same data in one
# run, as ratios (BENCHMARKS.md); about 20 minutes plus HBase's start; starts what
# it needs (HBASE_RUN_DIR=... uses a running scripts/hbase.sh HBase).
bench:
	scripts/bench.sh

# The Compose stack for real: a private Docker engine, images built from local
# bases, HBase + adapter + Prometheus up, write/read/restart checked, torn down
# (scripts/compose-test.sh; needs root, installs docker.io, docker-compose and
# mmdebstrap with apt-get when missing).
.PHONY: compose-test
compose-test:
	scripts/compose-test.sh

# Fault tests of the HBase client and the adapter on a two-region-server HBase
# started for the run (about 12 minutes; the last part of make test): a region
# server frozen, killed, stopped, regions moved and split under a write load,
# also while the compactor folds closed hours; 0 acknowledged writes may be
# lost.
.PHONY: test-faults
test-faults:
	scripts/test-faults.sh

# Every fuzz target for FUZZTIME (30s) each, or those matching FUZZ (a regexp
# of "package.FuzzName"); failing inputs land in the package's testdata/fuzz.
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZ)
