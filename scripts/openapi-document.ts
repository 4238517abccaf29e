// Writes the control plane's OpenAPI document to a file, for the console's build: its API
// types are generated from it (openapi-typescript), so the console cannot drift from the API.
// The app is only assembled, never listens and never serves a request, so it needs neither a
// database nor a cluster.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
// For its types: `app.swagger()` is declared by the plugin, which the control plane registers.
import type {} from '@fastify/swagger'
import { parseConfig } from '@session-relay/control/config'
import { buildApp } from '@session-relay/control/http/app'
import { createLogger } from '@session-relay/control/logger'
import type { Database } from '@session-relay/control/store/db'

const out = process.argv[2]
if (out === undefined) {
  console.error('usage: node dist/scripts/openapi-document.js OUT.json')
  process.exit(2)
}
const config = parseConfig(['--dev-insecure-skip-auth', '--log-level', 'silent'], {})
// No route runs, so no query is ever made: a database that refuses is enough.
const db = new Proxy(
  {},
  {
    get: () => {
      throw new Error('no database while writing the OpenAPI document')
    },
  },
) as Database
const app = await buildApp(config, { db, logger: createLogger('silent'), auth: null })
await app.ready()
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, JSON.stringify(app.swagger(), null, 2) + '\n')
await app.close()
