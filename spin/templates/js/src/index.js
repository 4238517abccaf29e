// The function's handler: Spin calls it for every request on the function's route.
import { get } from 'fermyon:spin/variables@2.0.0'

addEventListener('fetch', (event) => {
  event.respondWith(handle(event.request))
})

async function handle (request) {
  const path = new URL(request.url).pathname
  // A function's stdout and stderr are its application's log.
  console.log(`{{function}}: ${request.method} ${path}`)
  // An application variable, declared with its default in variables.toml: the application's
  // value when it sets one (wasmkube vars set), else that default.
  const greeting = get('greeting')
  return new Response(`${greeting} from {{function}}\n`, {
    status: 200,
    headers: { 'content-type': 'text/plain', 'x-request-path': path },
  })
}
