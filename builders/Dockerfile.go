# The Go builder: stock Go (no TinyGo) from the Go module proxy's golang.org/toolchain module
# (the toolchain `go` itself downloads for GOTOOLCHAIN), checked against its pinned sha256,
# plus Node for the builder program. Builds are GOOS=wasip1 GOARCH=wasm modules for Spin's
# WAGI executor (builders/README.md). Built and run by npm run test:images
# (scripts/image-builder-go.ts): the template builds, pushes and answers through the worker.
ARG BASE_IMAGE=node:24.21.0-trixie-slim
ARG GO_VERSION=1.26.8
ARG GO_ZIP_SHA256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

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

# The builder program's run-time dependencies (`-w builders`): tar-stream (the archive); its js
# toolchain is optional and omitted, jco-transpile removed again (go builds never load it: WAGI
# runs the wasip1 module as it is), and the relay's and the control plane's packages stay out.
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY --from=manifests / ./
RUN npm ci -w builders --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force \
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

FROM ${BASE_IMAGE} AS go
ARG GO_VERSION
ARG GO_ZIP_SHA256
# The test's stand-in base lends the host's trust store (scripts/image-base.ts); else Debian's.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl unzip \
 && ca=/etc/ssl/certs/ca-certificates.crt && if [ -f /usr/local/etc/host-ca-certificates.crt ]; then ca=/usr/local/etc/host-ca-certificates.crt; fi \
 && curl -fsSL --cacert "$ca" -o /tmp/go.zip "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${GO_VERSION}.linux-amd64.zip" \
 && echo "${GO_ZIP_SHA256}  /tmp/go.zip" | sha256sum -c - \
 && unzip -q /tmp/go.zip -d /tmp/go && mv "/tmp/go/golang.org/toolchain@v0.0.1-go${GO_VERSION}.linux-amd64" /usr/local/go

FROM ${BASE_IMAGE}
COPY --from=go /usr/local/go /usr/local/go
# The runtime uid gets a passwd entry with its home in the writable /tmp, as in the js image.
RUN echo 'builder:x:10001:10001:builder:/tmp:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'builder:x:10001:' >> /etc/group
ENV PATH=/usr/local/go/bin:$PATH
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY common/package.json ./common/
COPY --from=build /app/common/dist ./common/dist
COPY spin/package.json ./spin/
COPY --from=build /app/spin/dist ./spin/dist
COPY builders/package.json ./builders/
COPY --from=build /app/builders/dist ./builders/dist
# The pod is this image's build sandbox (a Job's security context, read-only root and
# NetworkPolicy): the builder runs each step as it is, with the same environment rules.
ENV BUILD_SANDBOX=pod
USER 10001:10001
ENTRYPOINT ["node", "builders/dist/main.js"]
