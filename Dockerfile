# Multi-stage build on Debian 12. Build stage: the release build. Runtime
# stage: only runtime libraries and the two binaries, run as a non-root user.
FROM debian:bookworm-slim AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config libabsl-dev libxxhash-dev libgtest-dev \
      libgmock-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCLICKD_BUILD_BENCH=OFF \
 && cmake --build /build --target clickd clickctl

FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libabsl20220623 libxxhash0 libgrpc++1.51 libprotobuf32 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home /var/lib/clickd clickd \
 && mkdir -p /var/lib/clickd && chown clickd /var/lib/clickd
COPY --from=build /build/server/clickd /build/client/clickctl /usr/local/bin/
USER clickd
VOLUME /var/lib/clickd
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/clickd"]
CMD ["--address=0.0.0.0:50051"]
