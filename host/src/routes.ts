// Spin's http routes: `/a/b` matches that path only; `/a/...` matches `/a` and everything
// below it; `/...` matches every path. An exact route wins over a wildcard, a longer wildcard
// prefix over a shorter one (Spin's router: spinframework/spin crates/http/src/routes.rs).
// Spin's `:name` segments are not supported here: the control plane generates none.

export type Route = { route: string; component: string }

export type RouteMatch = {
  component: string
  route: string
  /** The route without its `/...`: Spin's spin-component-route. */
  base: string
  /** The part of the path below the route: Spin's spin-path-info. */
  pathInfo: string
}

type Compiled = { route: string; component: string; wildcard: boolean; prefix: string }

const WILDCARD = '/...'

export function compileRoutes (routes: Route[]): (path: string) => RouteMatch | null {
  const compiled: Compiled[] = routes.map(({ route, component }) => {
    if (!route.startsWith('/')) throw new Error(`route ${JSON.stringify(route)} does not start with /`)
    const wildcard = route.endsWith(WILDCARD)
    const prefix = trimSlash(wildcard ? route.slice(0, -WILDCARD.length) : route)
    return { route, component, wildcard, prefix }
  })
  // Exact routes first, then wildcards from the longest prefix down.
  compiled.sort((a, b) => Number(a.wildcard) - Number(b.wildcard) || b.prefix.length - a.prefix.length)
  return (rawPath) => {
    const path = trimSlash(rawPath)
    for (const entry of compiled) {
      if (!entry.wildcard) {
        if (path === entry.prefix) return { component: entry.component, route: entry.route, base: entry.prefix, pathInfo: '' }
        continue
      }
      if (entry.prefix === '' || path === entry.prefix || path.startsWith(`${entry.prefix}/`)) {
        return { component: entry.component, route: entry.route, base: entry.prefix, pathInfo: rawPath.slice(entry.prefix.length) }
      }
    }
    return null
  }
}

// "/a/" and "/a" are the same route; "/" is the empty prefix.
function trimSlash (path: string): string {
  return path.replace(/\/+$/, '')
}
