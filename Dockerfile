# The adapter's image: one static binary on a minimal runtime, as a non-root
# user, with /-/healthy as the container health check.
#
#   docker build -t prom-hbase/adapter .
#   docker run -p 9201:9201 -v promhbase:/data prom-hbase/adapter                  # embedded store
#   docker run -p 9201:9201 prom-hbase/adapter --hbase.zookeeper-quorum=zk:2181    # HBase
#
# Base images are build arguments, so the image also builds where the default
# registries cannot be reached: GO_IMAGE needs a Go >= 1.26 toolchain and a
# POSIX shell, RUNTIME_IMAGE can be any image (the binaries are static).
# PREBUILT, a directory inside the build context holding `adapter` and
# `healthcheck` built with CGO_ENABLED=0, skips the compile and packages those
# (scripts/compose-test.sh does, to reuse the host's Go build cache); the build
# stage then only needs a shell.
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
ARG PREBUILT=
ARG GOPROXY
WORKDIR /src
COPY go.mod go.sum ./
RUN if [ -z "$PREBUILT" ]; then go mod download; fi
COPY . .
RUN set -eu; mkdir -p /out/data; \
    if [ -n "$PREBUILT" ]; then \
      cp "$PREBUILT/adapter" "$PREBUILT/healthcheck" /out/; \
    else \
      CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/adapter ./deploy/healthcheck; \
    fi; \
    /out/adapter --help >/dev/null

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/adapter /out/healthcheck /usr/local/bin/
# The embedded store's directory, owned by the runtime user so that a named
# volume mounted here starts writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# From /, the adapter's default --storage.path (data/) is the volume at /data
# whatever arguments the container is given (a CMD naming it would be
# replaced by the first flag passed, the store moving to /data/data).
WORKDIR /
EXPOSE 9201
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/healthcheck", "http://127.0.0.1:9201/-/healthy"]
ENTRYPOINT ["/usr/local/bin/adapter"]
