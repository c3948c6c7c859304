# Tether: tether-server and the tether CLI on Debian 12.
#
#   docker build -t tether .
#   docker run --rm -p 50051:50051 tether
#
# The default build compiles both from source (stage build) into the image
# (the last stage). A second, opt-in target packs binaries built beforehand
# on a Debian 12 host instead, which saves the compile when they exist
# already (CI: scripts/container-test.sh, after scripts/test.sh's Release
# build); the image is otherwise the same (stage runtime-base):
#
#   mkdir -p /tmp/bin && cp build/bin/tether-server build/bin/tether \
#     build/lib/tether/tether-fmi2.so build/lib/tether/tether-fmi3.so \
#     build/lib/tether/libtether-fmi2.so.1 /tmp/bin/ \
#     && strip /tmp/bin/tether-server /tmp/bin/tether
#   docker build --target prebuilt --build-context prebuilt=/tmp/bin -t tether .
#
# (Release builds of this tree on Debian 12, e.g. by scripts/build.sh; the
# RUN below checks that every shared library they need is in the image.)
# BASE can name any Debian 12 image; scripts/container-test.sh builds one
# locally (BASE=localhost/debian-base:bookworm) and checks this image with
# podman. The server reads its settings from the environment (TETHER_LISTEN,
# TETHER_WORKERS, TETHER_MAX_SESSIONS, TETHER_LOG_FORMAT, ...).
ARG BASE=debian:bookworm-slim

# ---- runtime-base: shared libraries only, non-root; everything but the binaries
FROM ${BASE} AS runtime-base
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libspdlog1.10 libfmt9 libzip4 libtinyxml2-9 libhiredis0.14 tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 tether \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin tether
COPY examples /usr/share/tether/examples
# Where --state-dir (TETHER_STATE_DIR) keeps sessions across restarts when a
# volume is mounted there (deploy/compose.yaml, deploy/k8s); owned by the
# server's user so a fresh named volume starts writable. Unused unless set.
RUN mkdir -p /var/lib/tether && chown 10001:10001 /var/lib/tether && chmod 0700 /var/lib/tether
# Numeric, so that Kubernetes runAsNonRoot can verify it.
USER 10001:10001
# 0.0.0.0 inside the container: the port is published by the runtime.
ENV TETHER_LISTEN=0.0.0.0:50051
# Plaintext on 0.0.0.0 must be asked for explicitly: the image serves
# plaintext unless TETHER_TLS_CERT/TETHER_TLS_KEY (mounted PEM files) are set.
ENV TETHER_INSECURE=true
EXPOSE 50051
# Asks the server's standard gRPC health service on the port it listens on.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD tether health --server "127.0.0.1:${TETHER_LISTEN##*:}" --timeout 3 || exit 1
# tini is PID 1: it forwards SIGTERM to the server and reaps children.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/tether-server"]

# ---- prebuilt (opt-in, --target prebuilt): the binaries from the build
# context named prebuilt (a directory holding tether-server, tether,
# tether-fmi2.so, tether-fmi3.so and libtether-fmi2.so.1); the compile below
# is skipped.
FROM runtime-base AS prebuilt
COPY --from=prebuilt tether-server tether /usr/local/bin/
# The FMU libraries `tether fmu` packs: ../lib/tether/ from the tether executable.
COPY --from=prebuilt tether-fmi2.so tether-fmi3.so libtether-fmi2.so.1 /usr/local/lib/tether/
# Fail the build here, not at start-up, if a shared library is missing.
RUN for b in /usr/local/bin/tether-server /usr/local/bin/tether \
             /usr/local/lib/tether/tether-fmi2.so /usr/local/lib/tether/tether-fmi3.so \
             /usr/local/lib/tether/libtether-fmi2.so.1; do \
      if ldd "$b" | grep 'not found'; then exit 1; fi; \
    done

# ---- build: compilers and -dev packages, Release build of the two binaries
FROM ${BASE} AS build
ARG JOBS=2
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
      libspdlog-dev libfmt-dev libeigen3-dev libzip-dev libtinyxml2-dev libhiredis-dev \
      libxsimd-dev libxbyak-dev \
      libsuitesparse-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DTETHER_BUILD_TESTS=OFF -DTETHER_BUILD_BENCH=OFF \
 && cmake --build build -j "${JOBS}" --target tether-server tether \
 && strip build/bin/tether-server build/bin/tether \
 && strip --strip-unneeded build/lib/tether/tether-fmi2.so build/lib/tether/tether-fmi3.so \
      build/lib/tether/libtether-fmi2.so.1

# ---- the image (default target): runtime-base with the binaries built above
FROM runtime-base
COPY --from=build /src/build/bin/tether-server /src/build/bin/tether /usr/local/bin/
# The FMU libraries `tether fmu` packs: ../lib/tether/ from the tether executable.
COPY --from=build /src/build/lib/tether/tether-fmi2.so /src/build/lib/tether/tether-fmi3.so \
     /src/build/lib/tether/libtether-fmi2.so.1 /usr/local/lib/tether/
# Fail the build here, not at start-up, if a shared library is missing.
RUN for b in /usr/local/bin/tether-server /usr/local/bin/tether \
             /usr/local/lib/tether/tether-fmi2.so /usr/local/lib/tether/tether-fmi3.so \
             /usr/local/lib/tether/libtether-fmi2.so.1; do \
      if ldd "$b" | grep 'not found'; then exit 1; fi; \
    done
