// The web console (console/, built by Vite to static files): its public sign-in settings under
// /api/v1, and its files at /. Hashed assets never change under their name, so they are cached
// for good; index.html is revalidated on every load so a new build is picked up at once. Every
// file carries a Content-Security-Policy that allows scripts from this origin only.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { AuthSettings } from './auth-settings.js'

const IMMUTABLE = 'public, max-age=31536000, immutable'

const ConsoleConfig = Type.Object({
  auth: Type.Union(
    [
      Type.Object({
        issuer: Type.String({ description: 'the OpenID provider to sign in at (authorization code with PKCE)' }),
        clientId: Type.String({
          description: 'the public client id; empty: sign-in is not configured (PLATFORM_CONSOLE_CLIENT_ID)',
        }),
        scopes: Type.String({ description: 'space-separated scopes to ask for' }),
      }),
      Type.Null(),
    ],
    { description: 'null: authentication is off (--dev-insecure-skip-auth), no sign-in' },
  ),
})

/** GET /console-config, public: what the console needs before it can sign anyone in. Register under the API prefix. */
export function consoleConfigRoute(api: FastifyInstance, config: AuthSettings): void {
  const body = {
    auth: config.devInsecureSkipAuth
      ? null
      : { issuer: config.oidcIssuer, clientId: config.consoleClientId, scopes: config.consoleScopes },
  }
  api.get(
    '/console-config',
    {
      schema: {
        operationId: 'getConsoleConfig',
        tags: ['health'],
        summary: 'Public: how the web console signs in (issuer, public client id, scopes)',
        security: [],
        response: { 200: ConsoleConfig },
      },
    },
    (_request, reply) => reply.send(body),
  )
}

/** The built console at /, or a 503 at / that says how to build it. */
export async function registerConsole(app: FastifyInstance, config: AuthSettings): Promise<void> {
  const dir = config.consoleDir === '' ? defaultConsoleDir() : config.consoleDir
  if (!existsSync(join(dir, 'index.html'))) {
    app.get('/', { schema: { hide: true } }, async (_request, reply) =>
      reply.code(503).send({
        error: `the web console is not built: run "npm run build" (it writes ${dir}), or point --console-dir (PLATFORM_CONSOLE_DIR) at a build; the API under /api/v1 works without it`,
      }),
    )
    return
  }
  const csp = contentSecurityPolicy(config)
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    // One route per file found at start, so unknown paths keep the API's JSON 404.
    wildcard: false,
    index: ['index.html'],
    cacheControl: false,
    setHeaders: (res, path) => {
      res.header('cache-control', path.includes('/assets/') ? IMMUTABLE : 'no-cache')
      res.header('content-security-policy', csp)
      res.header('x-content-type-options', 'nosniff')
      res.header('referrer-policy', 'no-referrer')
    },
  })
}

/**
 * Scripts, fonts and images only from here; fetches to here and to the identity provider (its
 * discovery document and token endpoint). Inline styles are allowed: CodeMirror and uPlot size
 * and place their elements through style attributes.
 */
function contentSecurityPolicy(config: AuthSettings): string {
  const issuer = config.devInsecureSkipAuth || config.oidcIssuer === '' ? '' : ` ${new URL(config.oidcIssuer).origin}`
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${issuer}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

// The console's build is at dist/console of the checkout (or image), three levels up from
// both control/src/http (tests run the sources) and control/dist/http.
function defaultConsoleDir(): string {
  return fileURLToPath(new URL('../../../dist/console/', import.meta.url))
}
