// The relay refuses to start when uWebSockets.js's native binary cannot load, with one line
// naming the glibc it needs and the image as the way out. The binaries are the real ones the
// pinned mirror ships; the process-level check on a host whose glibc is too old for Node 24's
// binary is in `npm run test:images` (scripts/test-images.ts), which has a Node 24 at hand.
import { readFileSync } from 'node:fs'
import t from 'tap'
import type { Runtime } from '@session-relay/relay/http/uws-load-failure'
import { binaryPath, describeLoadFailure, glibcNeeded, IMAGE_HINT } from '@session-relay/relay/http/uws-load-failure'

const debian12: Runtime = { node: 'v24.21.0', abi: '137', platform: 'linux', arch: 'x64', glibc: '2.36' }

t.test('the glibc each supported binary needs is read from the binary itself', async (t) => {
  const needs = (abi: string): string | undefined => glibcNeeded(readFileSync(binaryPath({ ...debian12, abi })))
  t.equal(needs('127'), '2.27', 'Node 22 (ABI 127) loads on Debian 12')
  t.equal(needs('137'), '2.38', 'Node 24 (ABI 137) needs Debian 13')
  t.equal(glibcNeeded(Buffer.from('no versions here')), undefined)
})

t.test('Node 24 on glibc 2.36: one line naming the glibc needed and the image', async (t) => {
  const line = describeLoadFailure(debian12, readFileSync(binaryPath(debian12)))
  t.equal(
    line,
    `uWebSockets.js for Node v24.21.0 (ABI 137, linux-x64) needs glibc 2.38, this host has glibc 2.36; ${IMAGE_HINT}`,
  )
  t.notMatch(line, /\n/, 'one line')
})

t.test('a runtime the mirror has no binary for: the supported ones and the image', async (t) => {
  const musl: Runtime = { node: 'v22.23.3', abi: '127', platform: 'linux', arch: 'riscv64', glibc: undefined }
  t.equal(
    describeLoadFailure(musl, undefined),
    `uWebSockets.js has no native binary for Node v22.23.3 (ABI 127, linux-riscv64); supported: Node 22 and 24 on Linux x64/arm64 with glibc; ${IMAGE_HINT}`,
  )
})

t.test('the tests run on a supported Node: 22 through npm on a host, 24 in the image', async (t) => {
  t.match(process.versions.node, /^(22|24)\./, `Node ${process.versions.node}`)
})
