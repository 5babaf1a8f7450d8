# Multi-stage build: compile with dev dependencies, run with production ones only, as a non-root user.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY lua ./lua
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY lua ./lua
USER node
EXPOSE 3000
# SIGTERM drains workers (SHUTDOWN_GRACE_MS) and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
