# OutaTime image: the server, the terminal client `outatime` and the load
# harness `outatime-load`.
#
#   docker compose up --build          (see docker-compose.yml)
#   docker build -t outatime-server .
#
# Build stage: the official Swift image for Debian 12, matching the toolchain
# the project is developed with.
ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-bookworm AS build

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libuv1-dev libsqlite3-dev libssl-dev libnats-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Resolve dependencies in their own layer, so source edits do not refetch them.
# (SwiftPM checks every target folder when it builds, hence Tests too below.)
COPY Package.swift ./
RUN swift package resolve

COPY Sources ./Sources
COPY Tests ./Tests
COPY clients ./clients
COPY Fuzz/Checks ./Fuzz/Checks
# The Swift runtime and Foundation are linked statically, so the runtime stage
# needs only the C libraries. The image carries the server and the terminal
# client `outatime`.
RUN swift build -c release --product outatime-server --static-swift-stdlib \
 && swift build -c release --product outatime --static-swift-stdlib \
 && swift build -c release --product outatime-load --static-swift-stdlib \
 && install -D "$(swift build -c release --show-bin-path)/outatime-server" /out/outatime-server \
 && install -D "$(swift build -c release --show-bin-path)/outatime" /out/outatime \
 && install -D "$(swift build -c release --show-bin-path)/outatime-load" /out/outatime-load

# Runtime stage: a slim Debian with the C libraries the binary links
# (libuv, SQLite, OpenSSL, libnats for cluster mode, the C++ runtime
# Foundation uses).
FROM debian:bookworm-slim

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libuv1 libsqlite3-0 libssl3 libnats3.4 libstdc++6 tzdata ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 1985 --user-group --home-dir /data --no-create-home outatime \
 && mkdir -p /data \
 && chown outatime:outatime /data

COPY --from=build /out/outatime-server /usr/local/bin/outatime-server
COPY --from=build /out/outatime /usr/local/bin/outatime
COPY --from=build /out/outatime-load /usr/local/bin/outatime-load

USER outatime
WORKDIR /data
VOLUME /data
EXPOSE 1985 9090

# Listens on every interface of the container and lets anyone in as
# `operate` (--allow-anonymous): fine for a local try-out behind a loopback
# port mapping (--allow-plaintext: plain TCP on a non-loopback address).
# Production: mount a tokens file and replace --allow-anonymous with
# --tokens /run/secrets/outatime-tokens.json, and serve TLS instead of
# --allow-plaintext: --tls-port 1986 --tls-cert … --tls-key … --no-plain
# (see README.md).
# Healthy while the store's writes succeed: GET /healthz over bash's
# /dev/tcp (the image has no HTTP client) on the --http port below.
# --http-public: the HTTP listener binds every interface of the container
# so that the published port reaches it; compose publishes it on the
# host's loopback only.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9090 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

CMD ["outatime-server", "--host", "0.0.0.0", "--port", "1985", "--db", "/data/outatime.sqlite", "--allow-anonymous", "--allow-plaintext", "--http", "0.0.0.0:9090", "--http-public"]
