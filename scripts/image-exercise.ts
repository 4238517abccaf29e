// What each image's entrypoint must do while it runs: a session round trip through the relay;
// the control plane's API on its volume, the worker it carries and a restart on that volume.
import { createHash } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import WebSocket from 'ws'
import { check } from './image-report.js'
import { imageEnv, startInRoot } from './image-root.js'
import type { Running } from './image-running.js'
import { stopWithSigterm, waitForHealth, withTimeout } from './image-running.js'

type Peer = {
  socket: WebSocket
  messages: Array<{ data: Buffer; binary: boolean }>
  closed: Promise<{ code: number; reason: string }>
}

async function attach(url: string, headers: Record<string, string> = {}): Promise<Peer> {
  const socket = new WebSocket(url, { headers })
  const messages: Peer['messages'] = []
  socket.on('message', (data, binary) => messages.push({ data: Buffer.from(data as Buffer), binary }))
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve())
      socket.once('error', reject)
    }),
    5_000,
    `attach to ${url.replace(/token=[^&]*/, 'token=...')}`,
  )
  return { socket, messages, closed }
}

async function received(peer: Peer, count: number): Promise<void> {
  const deadline = Date.now() + 5_000
  while (peer.messages.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
}

type Created = {
  id: string
  initiator_token: string
  responder_token: string
  initiator_url?: string
  responder_url?: string
}

async function createSession(port: number): Promise<Created> {
  const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
  if (response.status !== 201)
    throw new Error(`POST /admin/sessions answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as Created
}

export async function exerciseRelay(running: Running): Promise<void> {
  const { port } = running
  const session = await createSession(port)
  check(
    session.initiator_url === `ws://127.0.0.1:${port}/relay/${session.id}` &&
      session.responder_url === session.initiator_url,
    "relay: POST /admin/sessions 201, URLs on the node's own public base URL",
    session.initiator_url,
  )
  const initiator = await attach(session.initiator_url!, { authorization: `Bearer ${session.initiator_token}` })
  const responder = await attach(`${session.responder_url!}?token=${session.responder_token}`)
  initiator.socket.send('hello from the initiator')
  responder.socket.send(Buffer.from([0, 1, 2, 255]))
  await received(responder, 1)
  await received(initiator, 1)
  check(
    responder.messages[0]?.data.toString() === 'hello from the initiator' && responder.messages[0]?.binary === false,
    'relay: a text message from initiator to responder',
    responder.messages,
  )
  check(
    initiator.messages[0]?.binary === true && initiator.messages[0]?.data.equals(Buffer.from([0, 1, 2, 255])),
    'relay: a binary message from responder to initiator',
    initiator.messages,
  )
  const state = (await (await fetch(`http://127.0.0.1:${port}/admin/sessions/${session.id}`)).json()) as {
    state?: string
    bytes_in?: number
  }
  check(state.state === 'open' && state.bytes_in === 28, 'relay: the session is open with its bytes counted', state)
  initiator.socket.close(1000, 'done')
  const responderClosed = await withTimeout(responder.closed, 5_000, 'the responder to be closed')
  check(responderClosed.code === 1000, 'relay: a close from one peer reaches the other', responderClosed)

  // Shutdown as Kubernetes does it: SIGTERM drains, and at the drain timeout what is left gets 1001.
  const second = await createSession(port)
  const peers = [
    await attach(`${second.initiator_url!}?token=${second.initiator_token}`),
    await attach(`${second.responder_url!}?token=${second.responder_token}`),
  ]
  await stopWithSigterm(running, 'relay')
  const closes = await Promise.all(
    peers.map((peer) => withTimeout(peer.closed, 5_000, 'a peer to be closed on shutdown')),
  )
  check(
    closes.every((close) => close.code === 1001),
    'relay: on SIGTERM both peers of an open session get 1001 at the drain timeout',
    closes,
  )
  const logText = running.process.stdout()
  check(
    ![session, second].some((s) => logText.includes(s.initiator_token) || logText.includes(s.responder_token)),
    'relay: no slot token in the logs',
  )
}

export async function exerciseControl(running: Running): Promise<void> {
  const api = `http://127.0.0.1:${running.port}/api/v1`
  const name = `smoke-${createHash('sha256').update(String(Date.now())).digest('hex').slice(0, 8)}`
  const created = await fetch(`${api}/applications`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, language: 'go', runtime: 'wasmkube' }),
  })
  check(
    created.status === 201,
    'control: POST /api/v1/applications 201 on embedded PGlite',
    `${created.status} ${await created.clone().text()}`,
  )
  // No cluster here: the local runtime, which has no js toolchain in this image, says so.
  const script = (await (
    await fetch(`${api}/applications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `${name}-js`, language: 'js', runtime: 'wasmkube' }),
    })
  ).json()) as { id: string }
  const build = await fetch(`${api}/applications/${script.id}/builds`, { method: 'POST' })
  const refusal = await build.text()
  check(
    build.status === 503 &&
      refusal.includes(
        'js builds need the js toolchain: @spinframework/build-tools and esbuild are not installed here',
      ),
    'control: a js build answers 503 naming the toolchain the image leaves out',
    `${build.status} ${refusal}`,
  )
  const [volume, hostDir] = [...running.root.volumes][0] ?? []
  const stored = hostDir === undefined ? [] : readdirSync(hostDir)
  const foreign = stored.filter((file) => statSync(join(hostDir!, file)).uid !== running.owner.uid)
  check(
    volume !== undefined && stored.length > 0 && foreign.length === 0,
    `control: the database is in the declared volume ${volume}, written as uid ${running.owner.uid}`,
    { stored, foreign },
  )

  // The worker the local runtime starts (PLATFORM_LOCAL_WORKER): it runs in the image's root as
  // its user, compiled cache in the volume; stdin closed, it exits 0 (worker/README.md).
  const workerPath =
    running.config.env
      .find((entry) => entry.startsWith('PLATFORM_LOCAL_WORKER='))
      ?.slice('PLATFORM_LOCAL_WORKER='.length) ?? ''
  const worker = startInRoot(
    running.root,
    running.config,
    running.owner,
    [workerPath, '--cache-dir', `${volume ?? '/data'}/worker-check`],
    [],
    running.undo,
  )
  const ended = await worker.exited
  check(
    workerPath !== '' && ended.code === 0 && worker.stderr().includes('"worker ready"'),
    `control: the worker ${workerPath} starts in the image as uid ${running.owner.uid} and exits when its parent goes`,
    { ...ended, stderr: worker.stderr().slice(0, 400) },
  )
  await stopWithSigterm(running, 'control')

  // The same volume under a new process: what a pod restart with a persistent volume sees.
  const env = imageEnv(running.config, {
    PLATFORM_ADDR: `127.0.0.1:${running.port}`,
    PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true',
  })
  const again = startInRoot(
    running.root,
    running.config,
    running.owner,
    [...running.config.entrypoint, ...running.config.cmd],
    env,
    running.undo,
  )
  await waitForHealth(running.port, again)
  const list = (await (await fetch(`${api}/applications`)).json()) as Array<{ name: string }>
  check(
    list.some((app) => app.name === name),
    'control: a restart on the same volume still has the application',
    list,
  )
  await stopWithSigterm({ ...running, process: again }, 'control after the restart')
}
