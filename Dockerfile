# Build with the dev dependencies (TypeScript), then ship only dist and the production ones.
# The Node that CI runs (.ci/run prints it); move both together.
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lock file. The only install scripts are dev tools' (buf, esbuild,
# protobufjs), which package.json's allowScripts turns off too, and our own
# postinstall: patches/ applied to the dependencies they name (patch-package).
COPY patches ./patches
RUN npm ci --ignore-scripts --no-audit --no-fund && npx patch-package --error-on-fail
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY portal ./portal
COPY tools/build-portal.ts ./tools/
# The service and its portal (dist/portal): npm run build would also build packages/*, which the image does not copy.
RUN npx tsc -p tsconfig.build.json && node --import tsx tools/build-portal.ts && npm prune --omit=dev

FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# package.json carries "type": "module", which dist/*.js needs.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The embedded PGlite default (no DATABASE_URL) writes under ./data.
RUN mkdir -p data && chown node:node data
USER node
EXPOSE 8080
# The slim image has no curl; Node's fetch probes /healthz.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# As npm start runs it.
CMD ["node", "dist/main.js"]
