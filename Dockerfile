# gpuhq: one process, one SQLite file on the /app/data volume (docs/operations.md, "Docker").
#   docker build -t gpuhq .
#   docker volume create gpuhq-data
#   docker run --rm -v gpuhq-data:/app/data gpuhq admin create-account --email me@example.com --tenant-name "My rigs"
#   docker run -d --name gpuhq -p 8080:8080 -v gpuhq-data:/app/data -e PUBLIC_URL=https://gpuhq.example.com gpuhq
# Configuration is environment variables only (src/config.ts); SECRET_KEY, when not given, is
# generated once into /app/data/secret.key, so back that volume up.
# tests/docs/dockerfile.test.ts copies what the COPY lines name, as .dockerignore lets them through,
# installs as the RUN line does and runs the operator commands from that copy.
FROM oven/bun:1.4.5-slim

WORKDIR /app

# Runtime dependencies only, exactly as bun.lock records them: no devDependencies (drizzle-kit,
# typescript, test tools), and no peers (--omit=peer): @elysiajs/openapi names typescript as a
# peer for generating a document from type files, which gpuhq does not use.
# patches/ holds the bun patch of @elysiajs/openapi that package.json's patchedDependencies names.
COPY package.json bun.lock bunfig.toml tsconfig.json ./
COPY patches ./patches
RUN bun install --frozen-lockfile --production --omit=peer && rm -rf /root/.bun/install/cache

# Code and migrations stay owned by root: the service can read them, not change them.
COPY src ./src
COPY db ./db
COPY jobs ./jobs
# The web console's source: the service bundles it in memory at start (docs/console.md).
COPY web ./web
# The reference agent (built into /app/dist/agent below; install.sh and the tarball served as they
# are) and the protocol it shares with the service (imported by src/ as #protocol).
COPY agent ./agent
COPY protocol ./protocol
# The operator commands; `admin` on the PATH is scripts/admin, which here uses the image's Bun
# (GPUHQ_PREINSTALLED below) instead of installing one.
COPY scripts/admin scripts/admin.ts scripts/lib.sh scripts/build-agent.ts ./scripts/

# The agent as one executable per architecture, built here, while the build has network: the arm64
# one needs Bun's aarch64 runtime from the npm registry (bun build --compile fetches it). The
# running container serves /app/dist/agent and needs no network for it (docs/agent.md).
RUN bun scripts/build-agent.ts --out /app/dist/agent --require-all && rm -rf /root/.bun/install/cache

RUN ln -s /app/scripts/admin /usr/local/bin/admin && mkdir -p /app/data && chown bun:bun /app/data
VOLUME /app/data

# PAYMENT_PROVIDERS is empty on purpose: production refuses the sandbox provider; list real ones
# (e.g. nowpayments) at run time.
ENV NODE_ENV=production \
    PORT=8080 \
    DATA_DIR=/app/data \
    DATABASE_URL=file:/app/data/gpuhq.db \
    PAYMENT_PROVIDERS="" \
    GPUHQ_PREINSTALLED=1 \
    AGENT_BIN_DIR=/app/dist/agent

# Not root: the service, `admin` and everything started with `docker run`/`docker exec` run as bun.
USER bun
EXPOSE 8080

# The image has no curl; bun itself asks /healthz on the port the service listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["bun", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# bun is PID 1 (the base image's entrypoint execs it), so `docker stop`'s SIGTERM reaches the
# service, which drains in-flight requests and exits 0. The entrypoint runs any other command that
# is on the PATH instead (`admin …`).
CMD ["bun", "run", "src/main.ts"]
