# repobase: one image runs the whole service on its embedded Postgres (or on REPOBASE_UPSTREAM_URL).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY web ./web
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    REPOBASE_DATA_DIR=/data \
    REPOBASE_HOST=0.0.0.0
# The service runs as an unprivileged user, `repobase`, which also runs the embedded Postgres
# (as root the service would run Postgres as a system user `postgres` instead).
RUN groupadd --system repobase && useradd --system --gid repobase --home-dir /app repobase \
    && mkdir -p /data && chown repobase:repobase /data
WORKDIR /app
COPY --from=build --chown=repobase:repobase /app/node_modules ./node_modules
COPY --from=build --chown=repobase:repobase /app/dist ./dist
COPY --chown=repobase:repobase package.json ./
COPY --chown=repobase:repobase bin ./bin
COPY --chown=repobase:repobase config ./config
USER repobase
VOLUME ["/data"]
EXPOSE 8080 5433
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["bin/repobase.js"]
CMD ["serve"]
