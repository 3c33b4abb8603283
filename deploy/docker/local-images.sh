#!/usr/bin/env bash
# Copied from the workplace's shared/docker/local-images.sh (beside the
# repository; a clean clone in CI may not have it), used by
# deploy/compose-test.sh. Changes here: this header, a shellcheck note and PROM_ALL_SD
# (the Prometheus stand-in without the cloud service discoveries, step 9).
# local-images.sh: a Docker engine, Compose v2 and local stand-ins for the
# images of the project's docker-compose.yml, on a Debian bookworm machine
# (root) that reaches the package registries (Debian's packages, Maven
# Central, the Go module proxy, npm) but no container registry.
#
#   bash ../shared/docker/local-images.sh          # everything below (idempotent; cached under $WORK)
#   cd /path/to/project
#   docker compose up -d --build kafka chronos-1 chronos-2 prometheus
#
# What it produces (all local, tagged with the names the compose file and
# Dockerfile use, so neither file needs changing; pull_policy "missing"
# means nothing is pulled):
#   local/debian:bookworm                       debootstrap --variant=minbase + docker import
#   golang:1.26                                 local/debian + Go toolchain (host's, or golang.org/toolchain from the Go module proxy)
#   gcr.io/distroless/static-debian12:nonroot   FROM scratch: passwd/group (nonroot 65532), CA bundle, tzdata
#   apache/kafka:4.1.0                          local/debian + openjdk-17-jre-headless + Kafka 4.1.0 jars from Maven Central + KRaft entrypoint
#   prom/prometheus:v3.5.0                      local/debian + prometheus/promtool built from github.com/prometheus/prometheus@v0.305.0
#   grafana/grafana:12.1.0                      NOT POSSIBLE here (not in Debian; Go proxy answers 403 for v12.1.0) -> leave the service out
#
# No DOCKER_BUILDKIT=0 needed for this project: its Dockerfile has no
# `# syntax=` line (with one, BuildKit fetches that frontend image from
# Docker Hub and fails here; the classic builder, DOCKER_BUILDKIT=0, ignores it).
#
# Knobs: WORK (scratch dir), GO_FROM_PROXY=1 (ignore /usr/local/go), MIRROR (Debian mirror; default: the one apt uses),
# GO_VERSION (toolchain for golang:1.26, default 1.26.8), COMPOSE_VERSION
# (default v2.40.3), PROM_UI=1 (also build the Prometheus web UI with npm,
# ~6 min more), PROM_ALL_SD=1 (every service discovery of Prometheus), SKIP_PROMETHEUS=1, DOCKERD_FLAGS (extra dockerd flags, e.g.
# "--iptables=false --bridge=none --storage-driver=vfs" on hosts without
# netfilter/overlayfs; not needed on this VM).
set -euo pipefail
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/chronos-docker}
GO_VERSION=${GO_VERSION:-1.26.8}
COMPOSE_VERSION=${COMPOSE_VERSION:-v2.40.3}
PROM_MODULE_VERSION=${PROM_MODULE_VERSION:-v0.305.0}   # = Prometheus 3.5.0
KAFKA_VERSION=${KAFKA_VERSION:-4.1.0}
export DOCKER_BUILDKIT=0
mkdir -p "$WORK" "$WORK/images"
log() { printf '\n=== [%s] %s\n' "$(date +%T)" "$*"; }
t0=$(date +%s)

if [ -z "${MIRROR:-}" ]; then
  MIRROR=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$MIRROR" ] || MIRROR=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$MIRROR" ] || { echo "no Debian mirror found in apt's sources; set MIRROR"; exit 1; }
fi

log "1. packages (docker.io 20.10 engine + containerd + runc, debootstrap, maven)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  docker.io containerd runc tini iptables debootstrap ca-certificates curl git maven >/dev/null

log "2. Go toolchain >= 1.24 (to build compose/prometheus and for golang:1.26)"
if [ -z "${GO_FROM_PROXY:-}" ] && [ -x /usr/local/go/bin/go ] && /usr/local/go/bin/go version | grep -q "go${GO_VERSION%.*}"; then
  GOROOT_SRC=/usr/local/go
elif [ -d "$WORK/go-toolchain/go${GO_VERSION}" ]; then
  GOROOT_SRC=$WORK/go-toolchain/go${GO_VERSION}
else
  # The Go distribution is itself a module on the Go module proxy; any go
  # (even Debian's 1.19) can download it.
  command -v go >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null
  mod=golang.org/toolchain@v0.0.1-go${GO_VERSION}.linux-amd64
  dir=$(GOFLAGS=-mod=mod GOTOOLCHAIN=local go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$WORK/go-toolchain"; cp -a "$dir" "$WORK/go-toolchain/go${GO_VERSION}"; chmod -R u+w "$WORK/go-toolchain/go${GO_VERSION}"
  chmod +x "$WORK/go-toolchain/go${GO_VERSION}"/bin/* "$WORK/go-toolchain/go${GO_VERSION}"/pkg/tool/*/* || true
  GOROOT_SRC=$WORK/go-toolchain/go${GO_VERSION}
fi
export PATH=$GOROOT_SRC/bin:$PATH GOTOOLCHAIN=local
go version

log "3. dockerd (background; no systemd here)"
if ! docker info >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  nohup dockerd ${DOCKERD_FLAGS:-} >"$WORK/dockerd.log" 2>&1 &
  echo $! >"$WORK/dockerd.pid"
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info --format 'engine {{.ServerVersion}} storage={{.Driver}} cgroup={{.CgroupVersion}}'

log "4. docker compose v2 (built from the Go module proxy, installed as CLI plugin)"
if ! docker compose version 2>/dev/null | grep -q "$COMPOSE_VERSION"; then
  dir=$(go mod download -json "github.com/docker/compose/v2@${COMPOSE_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$WORK/compose-src"; cp -r "$dir" "$WORK/compose-src"; chmod -R u+w "$WORK/compose-src"
  (cd "$WORK/compose-src" && CGO_ENABLED=0 go build -trimpath \
     -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=${COMPOSE_VERSION}" -o "$WORK/docker-compose" ./cmd)
  install -D -m 0755 "$WORK/docker-compose" /usr/local/lib/docker/cli-plugins/docker-compose
fi
docker compose version

log "5. local/debian:bookworm from debootstrap ($MIRROR)"
if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$MIRROR" "$MIRROR" "$MIRROR" >"$WORK/rootfs/etc/apt/sources.list"
  rm -rf "$WORK/rootfs"/var/cache/apt/archives/*.deb "$WORK/rootfs"/var/lib/apt/lists/*
  tar -C "$WORK/rootfs" -c . | docker import --change 'CMD ["bash"]' - local/debian:bookworm
fi
docker run --rm local/debian:bookworm echo "local/debian:bookworm runs"

# Extra CAs of this host (a TLS-intercepting egress proxy, an Artifactory):
# containers must trust them to reach the Go proxy / Debian mirror like the host.
copy_cas() { mkdir -p "$1/extra-ca"; cp /usr/local/share/ca-certificates/*.crt "$1/extra-ca/" 2>/dev/null || true; }

log "6. golang:1.26 (Go ${GO_VERSION})"
I=$WORK/images/golang; mkdir -p "$I"; copy_cas "$I"
tar -C "$(dirname "$GOROOT_SRC")" --transform "s,^$(basename "$GOROOT_SRC"),go," -cf "$I/go.tar" "$(basename "$GOROOT_SRC")"
cat >"$I/Dockerfile" <<'EOF'
FROM local/debian:bookworm
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates git && rm -rf /var/lib/apt/lists/*
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
ADD go.tar /usr/local/
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOTOOLCHAIN=local
RUN mkdir -p /go/bin /go/src && go version
WORKDIR /go
EOF
docker build -q -t golang:1.26 -t "golang:${GO_VERSION}" "$I"
rm -f "$I/go.tar"

log "7. gcr.io/distroless/static-debian12:nonroot stand-in"
I=$WORK/images/distroless; R=$I/root; rm -rf "$R"; mkdir -p "$R/etc/ssl/certs" "$R/usr/share" "$R/tmp" "$R/home/nonroot" "$R/root"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$R/etc/passwd"
printf 'root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n' >"$R/etc/group"
printf 'hosts: files dns\n' >"$R/etc/nsswitch.conf"
docker run --rm local/debian:bookworm cat /etc/os-release >"$R/etc/os-release"
docker run --rm local/debian:bookworm tar -C /usr/share -c zoneinfo | tar -C "$R/usr/share" -x
docker run --rm golang:1.26 cat /etc/ssl/certs/ca-certificates.crt >"$R/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$R/tmp"; chown 65532:65532 "$R/home/nonroot"; chmod 700 "$R/root"
cat >"$I/Dockerfile" <<'EOF'
FROM scratch
COPY root/ /
USER 65532:65532
WORKDIR /home/nonroot
ENV PATH=/usr/local/bin:/usr/bin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EOF
docker build -q -t gcr.io/distroless/static-debian12:nonroot "$I"

log "8. apache/kafka:${KAFKA_VERSION} stand-in (jars from Maven Central)"
I=$WORK/images/kafka; mkdir -p "$I/bin" "$I/config" "$WORK/kafka-mvn"
cat >"$WORK/kafka-mvn/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.standins</groupId><artifactId>kafka-dist</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.17</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-storage</artifactId><version>${KAFKA_VERSION}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>2.24.3</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>2.24.3</version></dependency>
  </dependencies>
</project>
EOF
rm -rf "$I/libs"
(cd "$WORK/kafka-mvn" && mvn -B -q dependency:copy-dependencies -DoutputDirectory="$I/libs" -DincludeScope=runtime)
cat >"$I/bin/kafka-run-class.sh" <<'EOF'
#!/bin/bash
# Minimal stand-in for Apache Kafka's bin/kafka-run-class.sh (jars from Maven Central).
base=$(cd "$(dirname "$0")/.." && pwd)
: "${KAFKA_HEAP_OPTS:=-Xmx256m}"
exec java $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_OPTS \
  -Dlog4j2.configurationFile="${KAFKA_LOG4J_CONFIG:-$base/config/log4j2-tools.properties}" \
  -cp "$base/libs/*" "$@"
EOF
# shellcheck disable=SC2016 # $0 and $@ are for the generated script
mk() { printf '#!/bin/bash\nexec "$(dirname "$0")/kafka-run-class.sh" %s "$@"\n' "$2" >"$I/bin/$1"; }
mk kafka-broker-api-versions.sh org.apache.kafka.tools.BrokerApiVersionsCommand
mk kafka-topics.sh org.apache.kafka.tools.TopicCommand
mk kafka-consumer-groups.sh org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
mk kafka-storage.sh kafka.tools.StorageTool
mk kafka-metadata-quorum.sh org.apache.kafka.tools.MetadataQuorumCommand
mk kafka-console-consumer.sh org.apache.kafka.tools.consumer.ConsoleConsumer
mk kafka-console-producer.sh org.apache.kafka.tools.ConsoleProducer
cat >"$I/bin/kafka-server-start.sh" <<'EOF'
#!/bin/bash
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}"
export KAFKA_LOG4J_CONFIG="${KAFKA_LOG4J_CONFIG:-$(dirname "$0")/../config/log4j2.properties}"
exec "$(dirname "$0")/kafka-run-class.sh" kafka.Kafka "$@"
EOF
cat >"$I/bin/docker-run" <<'EOF'
#!/bin/bash
# Stand-in for apache/kafka's /etc/kafka/docker/run: KAFKA_FOO_BAR=x -> foo.bar=x
# ("__" -> "_", "___" -> "-"), format the log dirs once, start the server.
set -euo pipefail
props=/opt/kafka/config/server.properties
: > "$props"
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_LOG4J_CONFIG) continue ;;
    KAFKA_*) key=${name#KAFKA_}; key=${key,,}; key=${key//___/-}; key=${key//__/@}; key=${key//_/.}; key=${key//@/_}
             printf '%s=%s\n' "$key" "$value" >> "$props" ;;
  esac
done < <(env)
echo "[docker-run] server.properties:"; sed 's/^/  /' "$props"
/opt/kafka/bin/kafka-storage.sh format --cluster-id "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$props" --ignore-formatted
exec /opt/kafka/bin/kafka-server-start.sh "$props"
EOF
chmod +x "$I"/bin/*
cat >"$I/config/log4j2.properties" <<'EOF'
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
EOF
sed 's/level = info/level = warn/' "$I/config/log4j2.properties" >"$I/config/log4j2-tools.properties"
copy_cas "$I"
cat >"$I/Dockerfile" <<'EOF'
FROM local/debian:bookworm
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless && rm -rf /var/lib/apt/lists/*
RUN groupadd -g 1000 appuser && useradd -u 1000 -g 1000 -M -d /home/appuser appuser \
 && mkdir -p /opt/kafka /var/lib/kafka/data /etc/kafka/docker /home/appuser && chown -R appuser:appuser /var/lib/kafka /home/appuser
COPY libs/ /opt/kafka/libs/
COPY bin/ /opt/kafka/bin/
COPY config/ /opt/kafka/config/
RUN cp /opt/kafka/bin/docker-run /etc/kafka/docker/run && chown -R appuser:appuser /opt/kafka/config
USER appuser
EXPOSE 9092
ENTRYPOINT ["/etc/kafka/docker/run"]
EOF
docker build -q -t "apache/kafka:${KAFKA_VERSION}" "$I"

if [ -z "${SKIP_PROMETHEUS:-}" ]; then
  log "9. prom/prometheus:v3.5.0 stand-in (github.com/prometheus/prometheus@${PROM_MODULE_VERSION})"
  I=$WORK/images/prometheus; mkdir -p "$I"
  dir=$(go mod download -json "github.com/prometheus/prometheus@${PROM_MODULE_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  rm -rf "$WORK/prom-src"; cp -r "$dir" "$WORK/prom-src"; chmod -R u+w "$WORK/prom-src"
  # Service discovery: the project's prometheus.yml uses static_configs only, so unless
  # PROM_ALL_SD=1 the generated plugins/plugins.go (every bundled SD: AWS, Azure, GCE, Consul,
  # ...; what `make plugins` writes from plugins.yml) is emptied, as a trimmed plugins.yml
  # would: their cloud SDKs are a large share of a cold compile. File and HTTP SD stay
  # (plugins/minimum.go); promtool still compiles Kubernetes SD, which it imports itself.
  if [ -z "${PROM_ALL_SD:-}" ]; then printf '// Emptied by local-images.sh (PROM_ALL_SD unset).\npackage plugins\n' >"$WORK/prom-src/plugins/plugins.go"; fi
  tags=netgo
  if [ -n "${PROM_UI:-}" ]; then   # the React/Mantine UI, else only the HTTP API works (UI pages answer 500)
    (cd "$WORK/prom-src/web/ui" && npm ci --no-audit --no-fund >/dev/null \
      && npm run build -w @prometheus-io/lezer-promql && npm run build -w @prometheus-io/codemirror-promql \
      && npm run build -w @prometheus-io/mantine-ui && mkdir -p static && rm -rf static/mantine-ui && mv mantine-ui/dist static/mantine-ui)
    (cd "$WORK/prom-src" && bash scripts/compress_assets.sh)
    tags=netgo,builtinassets
  fi
  (cd "$WORK/prom-src" \
    && CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "-s -w -X github.com/prometheus/common/version.Version=3.5.0" -o "$I/prometheus" ./cmd/prometheus \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$I/promtool" ./cmd/promtool)
  cat >"$I/Dockerfile" <<'EOF'
FROM local/debian:bookworm
COPY prometheus promtool /bin/
RUN mkdir -p /etc/prometheus /prometheus && chown -R nobody:nogroup /etc/prometheus /prometheus \
 && printf 'global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: prometheus\n    static_configs:\n      - targets: ["localhost:9090"]\n' > /etc/prometheus/prometheus.yml
USER nobody
EXPOSE 9090
VOLUME ["/prometheus"]
WORKDIR /prometheus
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
EOF
  docker build -q -t prom/prometheus:v3.5.0 "$I"
fi

log "done in $(( $(date +%s) - t0 ))s"
docker images --format '{{.Repository}}:{{.Tag}}  {{.Size}}'
cat <<'EOF'

Next, in the project directory (grafana/grafana:12.1.0 cannot be produced here, so name the other services):
  export DOCKER_BUILDKIT=0
  docker compose up -d --build kafka chronos-1 chronos-2 prometheus
  curl -s localhost:8081/readyz; curl -s localhost:8082/readyz; curl -s localhost:9090/api/v1/targets
  docker compose down -v
Stop the engine: kill "$(cat $WORK/dockerd.pid)"   (dockerd stops its containerd child)
EOF
