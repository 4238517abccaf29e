# The Go builder: TinyGo and Go with the Spin Go SDK's modules in the image's cache (builds run
# with GOPROXY=off), plus Node for the builder program. UNVERIFIED: TinyGo and Go cannot be
# installed on the machine this was written on; versions per the TinyGo and Spin Go SDK docs.
ARG BASE_IMAGE=node:24.21.0-trixie-slim
ARG GO_VERSION=1.24.4
ARG TINYGO_VERSION=0.37.0

# The builder program's one run-time dependency (tar-stream, for the archive): the js toolchain
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

FROM ${BASE_IMAGE}
ARG GO_VERSION
ARG TINYGO_VERSION
# The runtime uid gets a passwd entry with its home in the writable /tmp, as in the js image:
# TinyGo keeps its cache in the user's cache directory, which needs a home.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
 && curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-amd64.tar.gz" | tar -C /usr/local -xz \
 && curl -fsSLo /tmp/tinygo.deb "https://github.com/tinygo-org/tinygo/releases/download/v${TINYGO_VERSION}/tinygo_${TINYGO_VERSION}_amd64.deb" \
 && dpkg -i /tmp/tinygo.deb && rm /tmp/tinygo.deb \
 && apt-get purge -y curl && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
 && echo 'builder:x:10001:10001:builder:/tmp:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'builder:x:10001:' >> /etc/group
ENV PATH=/usr/local/go/bin:$PATH \
    GOMODCACHE=/opt/go/mod \
    GOCACHE=/tmp/go-cache
# Fill the module cache with the template's dependencies (the SDK), the only modules builds may use.
COPY builders/templates/go /tmp/warm
RUN cd /tmp/warm && sed -i 's/{{function}}/warm/' go.mod main.go && go mod download all && rm -rf /tmp/warm \
 && chmod -R a+rX /opt/go
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/common/src ./dist/common/src
COPY --from=build /app/dist/control/src/source ./dist/control/src/source
COPY --from=build /app/dist/control/src/errors.js ./dist/control/src/errors.js
COPY --from=build /app/dist/builders/src ./dist/builders/src
USER 10001:10001
ENTRYPOINT ["node", "dist/builders/src/main.js"]
