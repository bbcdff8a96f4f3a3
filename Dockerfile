# Build: compile TypeScript (and the native SQLite module) with the dev tools.
# `npm ci` runs the `prepare` script (tsc), so this stage needs the dev dependencies and src/.
FROM node:26-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund

# Runtime: production dependencies only, as the unprivileged node user.
FROM node:26-slim
WORKDIR /app
ENV NODE_ENV=production \
    LEMBAS_HOST=0.0.0.0 \
    LEMBAS_PORT=8788 \
    LEMBAS_STORE=sqlite:/data/store.db
COPY package.json package-lock.json ./
# --ignore-scripts: skips `prepare` (no tsc here) and better-sqlite3's native build; the build
# stage already compiled that one module, so only its binary is taken from there.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force \
  && mkdir -p /data && chown node:node /data
COPY --from=build /app/node_modules/better-sqlite3/build/Release/better_sqlite3.node \
  ./node_modules/better-sqlite3/build/Release/better_sqlite3.node
COPY --from=build /app/dist/src ./dist/src
COPY loop.json ./
COPY prompts ./prompts
USER node
VOLUME /data
EXPOSE 8788
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.LEMBAS_PORT||8788)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/cli.js"]
