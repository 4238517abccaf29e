// The function's handler: Spin calls it for every request on the function's route.
// The builder strips the types (esbuild); `npx tsc --noEmit` checks them where TypeScript is installed.
import { get } from 'fermyon:spin/variables@2.0.0'

interface FetchEvent {
  request: Request
  respondWith: (response: Response | Promise<Response>) => void
}
declare function addEventListener (type: 'fetch', listener: (event: FetchEvent) => void): void

addEventListener('fetch', (event: FetchEvent) => {
  event.respondWith(handle(event.request))
})

// An application variable's value, or `fallback` when the application declares none of that
// name (or it has no value): the function answers before any variable is set.
function variable (name: string, fallback: string): string {
  try {
    return get(name)
  } catch {
    return fallback
  }
}

async function handle (request: Request): Promise<Response> {
  const path: string = new URL(request.url).pathname
  // A function's stdout and stderr are its application's log.
  console.log(`{{function}}: ${request.method} ${path}`)
  const greeting = variable('greeting', 'hello')
  return new Response(`${greeting} from {{function}}\n`, {
    status: 200,
    headers: { 'content-type': 'text/plain', 'x-request-path': path },
  })
}
