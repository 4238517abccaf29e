# The Go builder: stock Go (no TinyGo) from the Go module proxy's golang.org/toolchain module
# (the toolchain `go` itself downloads for GOTOOLCHAIN), checked against its pinned sha256,
# plus Node for the builder program. Builds are GOOS=wasip1 GOARCH=wasm modules for Spin's
# WAGI executor (builders/README.md). Built and run by npm run test:images
# (scripts/image-builder-go.ts): the template builds, pushes and answers through the worker.
ARG BASE_IMAGE=node:24.21.0-trixie-slim
ARG GO_VERSION=1.26.8
ARG GO_ZIP_SHA256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

# The builder program's run-time dependencies: tar-stream (the archive); the js toolchain
# stays out, as do the relay's and the control plane's packages.
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN node -e 'const fs = require("fs"); const p = JSON.parse(fs.readFileSync("package.json", "utf8")); \
      p.dependencies = { "tar-stream": p.dependencies["tar-stream"] }; \
      delete p.devDependencies; delete p.workspaces; delete p.overrides; fs.writeFileSync("package.json", JSON.stringify(p))' \
 && npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci checks the lockfile against every workspace's manifest (the client, the console).
COPY client/package.json ./client/
COPY console/package.json ./console/
RUN npm ci --ignore-scripts --no-audit --no-fund && rm -f node_modules/.bin/node
COPY tsconfig.json tsconfig.build.json ./
COPY common ./common
COPY control ./control
COPY builders ./builders
COPY host ./host
RUN npm run build:ts

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
COPY --from=build /app/dist/common/src ./dist/common/src
COPY --from=build /app/dist/control/src/source ./dist/control/src/source
COPY --from=build /app/dist/builders/src ./dist/builders/src
USER 10001:10001
ENTRYPOINT ["node", "dist/builders/src/main.js"]
