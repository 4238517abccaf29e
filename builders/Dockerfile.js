# The js/ts builder: the builder program with its wasm toolchain (esbuild, @spinframework/build-tools'
# j2w, the http world). Builds are offline: nothing is installed per build. Node 24 on Debian 13
# like the other images; override with --build-arg BASE_IMAGE=...
# Needs a writable /tmp (an emptyDir when the root is read-only) and about 1 GiB of memory.
ARG BASE_IMAGE=node:24-trixie-slim

FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The relay's uWebSockets.js binaries and the control plane's database and cluster clients are
# never loaded by the builder.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
 && rm -rf node_modules/uWebSockets.js node_modules/@electric-sql node_modules/@kubernetes node_modules/pg

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund && rm -f node_modules/.bin/node
COPY tsconfig.json tsconfig.build.json ./
COPY common ./common
COPY control ./control
COPY builders ./builders
COPY host ./host
RUN npm run build

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/common/src ./dist/common/src
# The builder reuses the control plane's guarded archive unpacking.
COPY --from=build /app/dist/control/src/source ./dist/control/src/source
COPY --from=build /app/dist/control/src/errors.js ./dist/control/src/errors.js
COPY --from=build /app/dist/builders/src ./dist/builders/src
USER 10001:10001
ENTRYPOINT ["node", "dist/builders/src/main.js"]
