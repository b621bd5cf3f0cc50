# clickd container image: a multi-stage build on Debian 12.
#
#   build    the release build of clickd and clickctl, with the -dev packages
#   runtime  debian:bookworm-slim + the shared libraries the two binaries load,
#            run as the non-root user clickd (uid/gid 10001)
#
# Build it with scripts/build_image.sh (podman, no Docker engine needed; it
# also smoke-tests the result). docs/operations.md describes how to run it.
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libabsl-dev libxxhash-dev libeigen3-dev libgtest-dev \
      libgmock-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libcpp-httplib-dev libssl-dev libnats-dev nlohmann-json3-dev prometheus-cpp-dev librdkafka-dev \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The build tree goes in the same layer it is made in, so that repeated
# builds leave only the two binaries behind in podman's layer cache.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLICKD_BUILD_BENCH=OFF \
 && cmake --build /build --target clickd clickctl \
 && install -D -m 0755 -s /build/server/clickd /out/clickd \
 && install -D -m 0755 -s /build/client/clickctl /out/clickctl \
 && rm -rf /build

FROM debian:bookworm-slim
ARG VERSION=dev
LABEL org.opencontainers.image.title="clickd" \
      org.opencontainers.image.description="Online click-prediction gRPC service" \
      org.opencontainers.image.version="${VERSION}"
# Runtime libraries only; ldd in scripts/build_image.sh's smoke test fails
# the build if one is missing.
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libxxhash0 libgrpc++1.51 libprotobuf32 libcpp-httplib0.11 libnats3.4 librdkafka1 libprometheus-cpp-core1.0 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 clickd \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/clickd --no-create-home \
      --shell /usr/sbin/nologin clickd \
 && mkdir -p /var/lib/clickd /etc/clickd \
 && chown 10001:10001 /var/lib/clickd && chmod 0750 /var/lib/clickd
COPY --from=build /out/clickd /out/clickctl /usr/local/bin/
# Numeric, so that Kubernetes' runAsNonRoot can verify it without runAsUser.
USER 10001:10001
WORKDIR /var/lib/clickd
# Snapshots and the update log (--data_dir; docs/durability.md).
VOLUME /var/lib/clickd
# gRPC (clickd.v1.Clickd, grpc.health.v1; reflection only with --reflection),
# admin gRPC and plaintext health when --admin_address and --health_address
# are given (docs/security.md), and Prometheus /metrics.
EXPOSE 50051 50052 50053 9464
ENTRYPOINT ["/usr/local/bin/clickd"]
# Only flags this image's clickd knows: an unknown flag stops it at start
# (scripts/build_image.sh's smoke test runs exactly this command).
CMD ["--address=0.0.0.0:50051", "--metrics_address=0.0.0.0", "--metrics_port=9464", \
     "--data_dir=/var/lib/clickd"]
