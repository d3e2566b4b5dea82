# condense: one static-ish binary on a slim base.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY data data
COPY migrations migrations
COPY benches benches
# The playground's example threads are embedded from the test fixtures.
COPY tests/fixtures/threads tests/fixtures/threads
RUN cargo build --release --locked --bin condense

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/condense /usr/local/bin/condense
# The embedded SQLite cache lives on a volume; set CONDENSE_DATABASE_URL=postgres://…
# to share one cache between replicas.
RUN mkdir -p /data && chown 65534:65534 /data
VOLUME /data
# Inside a container, listen on every interface; outside, the default stays loopback.
ENV CONDENSE_LISTEN=0.0.0.0:8080 \
    CONDENSE_LOG_FORMAT=json \
    CONDENSE_CACHE_PATH=/data/condense-cache.sqlite3
USER 65534:65534
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/condense"]
