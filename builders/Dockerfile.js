# The js/ts builder: the builder program with its wasm toolchain (esbuild, @spinframework/build-tools'
# j2w, the http world). Builds are offline: nothing is installed per build. Node 24 on Debian 13
# like the other images, pinned to the release `npm run test:images` builds and runs it on;
# override with --build-arg BASE_IMAGE=... (any glibc Node 22 or 24 image).
# Needs a writable /tmp (an emptyDir when the root is read-only) and about 1 GiB of memory.
ARG BASE_IMAGE=node:24.21.0-trixie-slim

# The lockfile and every workspace's manifest, which npm ci checks the lockfile against.
FROM scratch AS manifests
COPY package.json package-lock.json /
COPY common/package.json /common/
COPY auth/package.json /auth/
COPY spin/package.json /spin/
COPY relay/package.json /relay/
COPY control/package.json /control/
COPY builders/package.json /builders/
COPY client/package.json /client/
COPY console/package.json /console/
COPY wasmkube/package.json /wasmkube/

# The builder's own dependencies only (`-w builders`: its package, the shared ones it names and
# its optional js/ts toolchain), at the lockfile's versions. Then what a build never loads is
# emptied (the template builds without it in `npm run test:images`): binaryen (wasm-opt: only
# `jco opt` resolves it) and the two componentize-js copies only `jco componentize` loads (jco's
# own 0.21 and its 0.19 alias; j2w imports build-tools' componentize-js 0.19), about 160 MiB.
# Each keeps its directory and package.json: build-tools' wit-dependency walker wants every
# declared dependency's directory to exist. jco-transpile (wasm-tools' component new, for the
# rust builds' wasip1 modules) goes whole: a js build never loads it (componentize.ts is
# imported only for rust).
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY --from=manifests / ./
RUN npm ci -w builders --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
 && test -f node_modules/@spinframework/build-tools/dist/index.js \
 && for unused in node_modules/binaryen node_modules/@bytecodealliance/componentize-js-0-19-3 \
      node_modules/@bytecodealliance/jco/node_modules/@bytecodealliance/componentize-js; do \
      test -f "$unused/package.json" || exit 1; find "$unused" -mindepth 1 -maxdepth 1 ! -name package.json -exec rm -rf {} + ; done \
 && rm -rf node_modules/@bytecodealliance/jco-transpile

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY --from=manifests / ./
# The `node` devDependency (a host's Node 22) has no binary without its install script, and
# this stage builds with the image's own Node 24: its dangling link goes.
RUN npm ci --ignore-scripts --no-audit --no-fund && rm -f node_modules/.bin/node
COPY tsconfig.base.json ./
COPY common ./common
COPY spin ./spin
COPY builders ./builders
# Declarations and build info serve the build only: the image keeps the JavaScript.
RUN npx tsc -b builders \
 && find common/dist spin/dist builders/dist \( -name '*.d.ts' -o -name '.tsbuildinfo' \) -delete

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
# The runtime uid gets a passwd entry with its home in the writable /tmp: componentize-js runs
# wizer with an environment without HOME, so wasmtime finds its cache config's directory from
# the passwd entry, and for a uid without one the componentize step fails with "config file not
# specified and failed to get the default" (seen in `npm run test:images`).
RUN echo 'builder:x:10001:10001:builder:/tmp:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'builder:x:10001:' >> /etc/group
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY common/package.json ./common/
COPY --from=build /app/common/dist ./common/dist
COPY spin/package.json ./spin/
COPY --from=build /app/spin/dist ./spin/dist
COPY builders/package.json ./builders/
COPY --from=build /app/builders/dist ./builders/dist
# A fixed numeric uid, so Kubernetes can verify runAsNonRoot without a passwd lookup.
# The pod is this image's build sandbox (a Job's security context, read-only root and
# NetworkPolicy): the builder runs each step as it is, with the same environment rules.
ENV BUILD_SANDBOX=pod
USER 10001:10001
ENTRYPOINT ["node", "builders/dist/main.js"]
