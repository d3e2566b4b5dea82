# condense: built in two stages (the dependencies, then condense), run from a
# distroless image (no shell, no package manager, no curl) as a non-root user.
# Configured by CONDENSE_* environment variables or a TOML file named by
# CONDENSE_CONFIG (docs/configuration.md); the Kubernetes manifests in deploy/
# set the rest from a Secret.
#
#   docker build -t condense . && docker run -p 8080:8080 condense

FROM rust:1.95-bookworm AS build
WORKDIR /src

# The dependencies first, against a stand-in crate: this layer is rebuilt only
# when Cargo.toml or Cargo.lock change, not when condense's own code does.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && echo 'fn main() {}' > benches/count.rs \
 && cp benches/count.rs benches/compress.rs \
 && cargo build --release --locked --bin condense \
 && rm -rf src benches target/release/.fingerprint/condense-* \
      target/release/deps/condense-* target/release/deps/libcondense-*

COPY src src
COPY assets assets
COPY data data
COPY migrations migrations
COPY benches benches
RUN cargo build --release --locked --bin condense \
 && mkdir -p /out/data \
 && cp target/release/condense /out/condense

# glibc and libgcc only: condense links nothing else (rustls, bundled SQLite).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/condense /usr/local/bin/condense
# The embedded SQLite cache (used when no CONDENSE_DATABASE_URL is set) is
# written to the working directory, a volume owned by the runtime user. Set
# CONDENSE_DATABASE_URL=postgres://… to share one cache between replicas.
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
VOLUME /data
# Inside a container, listen on every interface (outside, the default stays
# loopback), and log JSON lines for the log collector.
ENV CONDENSE_LISTEN=0.0.0.0:8080 \
    CONDENSE_LOG_FORMAT=json
USER 65532:65532
EXPOSE 8080
# The binary checks itself: GET /healthz at CONDENSE_LISTEN, exit 0 or 1.
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/condense", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/condense"]
