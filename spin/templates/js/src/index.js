// The function's handler: Spin calls it for every request on the function's route.
import { get } from 'fermyon:spin/variables@2.0.0'

// `get` runs in a realm of its own, whose built-ins (Uint8Array, String, an error's stack) are
// made on first use. Used once here, while the build snapshots the function, they are in the
// snapshot; otherwise every request makes them again, a third of its CPU (issue 43).
get.constructor('new Uint8Array(0); String(0); new Error().stack')()

addEventListener('fetch', (event) => {
  event.respondWith(handle(event.request))
})

// An application variable's value, or `fallback` when the application declares none of that
// name (or it has no value): the function answers before any variable is set.
function variable (name, fallback) {
  try {
    return get(name)
  } catch {
    return fallback
  }
}

async function handle (request) {
  const path = new URL(request.url).pathname
  // A function's stdout and stderr are its application's log.
  console.log(`{{function}}: ${request.method} ${path}`)
  const greeting = variable('greeting', 'hello')
  return new Response(`${greeting} from {{function}}\n`, {
    status: 200,
    headers: { 'content-type': 'text/plain', 'x-request-path': path },
  })
}
