// The function's handler: Spin calls it for every request on the function's route.
import { get } from 'fermyon:spin/variables@2.0.0'

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
