// The function's handler: Spin calls it for every request on the function's route.
addEventListener('fetch', (event) => {
  event.respondWith(handle(event.request))
})

async function handle (request) {
  const path = new URL(request.url).pathname
  // A function's stdout and stderr are its application's log.
  console.log(`{{function}}: ${request.method} ${path}`)
  return new Response(`hello from {{function}}\n`, {
    status: 200,
    headers: { 'content-type': 'text/plain', 'x-request-path': path },
  })
}
