# Multi-stage build on Debian 12. Build stage: compile with the same script
# CI uses. Runtime stage: only runtime libraries and the binaries, run as a
# non-root user.
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libabsl-dev libxxhash-dev libgtest-dev \
      libbenchmark-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLICKD_BUILD_BENCH=OFF \
 && cmake --build /build --target clickctl

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libxxhash0 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home /var/lib/clickd clickd \
 && mkdir -p /var/lib/clickd && chown clickd /var/lib/clickd
COPY --from=build /build/client/clickctl /usr/local/bin/clickctl
USER clickd
VOLUME /var/lib/clickd
ENTRYPOINT ["/usr/local/bin/clickctl"]
