# Build: compile TypeScript (and the native SQLite module) with the dev tools.
FROM node:20-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund

# Runtime: production dependencies only, as the unprivileged node user.
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production \
    LEMBAS_HOST=0.0.0.0 \
    LEMBAS_STORE=sqlite:/data/store.db
COPY package.json package-lock.json ./
# --ignore-scripts: the build stage already compiled the one native module; take it from there.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && mkdir -p /data && chown node:node /data
COPY --from=build /app/node_modules/better-sqlite3/build ./node_modules/better-sqlite3/build
COPY --from=build /app/dist ./dist
COPY loop.json ./
COPY prompts ./prompts
USER node
VOLUME /data
EXPOSE 8788
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s \
  CMD node -e "fetch('http://127.0.0.1:8788/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/src/cli.js"]
