#!/usr/bin/env bash
# `npm ci` under the project's own Node (the exact version of the `node` devDependency), on a
# machine whose Node is another one, such as Debian 12's. npm checks each package's `engines`
# against the Node that runs npm: under Node 20 it warns EBADENGINE for the packages that need
# Node 22 (cookie, undici, content-disposition), although they only ever run on the project's
# Node, which `npm test` and `npm run` put first on PATH. The machine's Node and npm only start
# this: the Node comes from the registry as a package (node-<os>-<arch>, the binary alone, no
# install script) into npm's cache, and npm runs under it. Arguments go to npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(node -p "require('./package.json').devDependencies.node")
if [ "$(node --version)" = "v$version" ]; then
  exec npm ci "$@"
fi
platform=$(node -p "process.platform + '-' + process.arch")
exec npm exec --yes --package="node-$platform@$version" -- npm ci "$@"
