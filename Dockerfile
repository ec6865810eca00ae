# svc-notifications: the server and its admin CLI, on embedded SQLite in /data by default.
#   docker build -t svc-notifications .
#   docker run -p 8070:8070 -v notifications:/data svc-notifications
# Without a registry, deploy/docker/build-node-base.sh builds the base image here first.
# docs/deployment.md has the rest: PostgreSQL, compose, settings, upgrades.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# A site without the public npm registry names its own: --build-arg npm_config_registry=URL.
ARG npm_config_registry
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY console ./console
RUN npm run build \
 && chmod +x dist/src/main.js dist/src/cli/main.js dist/src/readiness-probe.js \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    NOTIFICATIONS_DATABASE_URL=sqlite:/data/notifications.sqlite3 \
    NOTIFICATIONS_ADDRESS=0.0.0.0 \
    NOTIFICATIONS_SHUTDOWN_GRACE=8s
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/console ./dist/console
COPY console/index.html console/console.css console/icon.svg ./console/
COPY deploy/docker/serve.sh /usr/local/bin/svc-notifications-serve
RUN ln -s /app/dist/src/main.js /usr/local/bin/svc-notifications \
 && ln -s /app/dist/src/cli/main.js /usr/local/bin/svc-notifications-cmd \
 && mkdir /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8070
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["node", "/app/dist/src/readiness-probe.js"]
CMD ["svc-notifications-serve"]
