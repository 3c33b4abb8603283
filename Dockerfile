# Chronos image: a static binary on distroless (no shell, no package
# manager), running as the distroless "nonroot" user (65532).
#
#   docker build -t chronos .
#   docker run --rm chronos run --help
#
# deploy/deploy_test.go runs the `go build` line below and every command this
# image and the manifests start; see docs/deploy.md.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again
# (third_party holds the patched sarama go.mod replaces sarama with).
COPY go.mod go.sum ./
COPY third_party/ third_party/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/chronos ./cmd/chronos
# The data directory, owned by the runtime user: a named volume mounted on
# /data starts as a copy of it (owner included), so the store is writable.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chronos /chronos
COPY --from=build --chown=65532:65532 /out/data /data
ENV CHRONOS_DATA_DIR=/data \
    CHRONOS_HTTP_ADDR=0.0.0.0:8080
USER 65532:65532
EXPOSE 8080
VOLUME /data
ENTRYPOINT ["/chronos"]
CMD ["run"]
