// The builder Dockerfiles, read (podman 4.3 has no `build --dry-run`, and there is no
// hadolint); all three are also built and run by `npm run test:images`, which `npm test` does
// not run, so these checks are what every change gets. The checks: every base image and toolchain
// pinned to a full version (never `latest`), COPY and never ADD, a numeric non-root USER with
// a passwd entry (tools find their cache directory through it) that is the build Job's uid, and
// the same builder program as an exec-form ENTRYPOINT.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { BUILDER_UID } from '@session-relay/control/cluster/build-pod'

type Instruction = { keyword: string; args: string; line: number }

/** Instructions with their continuation lines joined and comment lines dropped. */
function instructions(text: string): Instruction[] {
  const result: Instruction[] = []
  let pending: { parts: string[]; line: number } | null = null
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim()
    if (line.startsWith('#') || (line === '' && pending === null)) return
    const continued = line.endsWith('\\')
    const part = continued ? line.slice(0, -1).trim() : line
    if (pending === null) pending = { parts: [part], line: index + 1 }
    else pending.parts.push(part)
    if (!continued) {
      const joined = pending.parts.filter((p) => p !== '').join(' ')
      const space = joined.search(/\s/)
      result.push({
        keyword: joined.slice(0, space).toUpperCase(),
        args: joined.slice(space + 1).trim(),
        line: pending.line,
      })
      pending = null
    }
  })
  return result
}

// A full version: 24.21.0, 1.93.0, 0.37.0 (a tag may go on with -trixie-slim and the like), or a digest.
const PINNED_TAG = /^[^:@\s]+(?::\d+\.\d+\.\d+(?:-[\w.-]+)?(?:@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$/
const FULL_VERSION = /^\d+\.\d+\.\d+$/

type Finding = string

function lintBuilderDockerfile(text: string): Finding[] {
  const findings: Finding[] = []
  const all = instructions(text)
  const args = new Map<string, string>()
  const stages = new Set<string>()
  for (const { keyword, args: rest, line } of all) {
    if (keyword === 'ARG') {
      const [name, value] = rest.split('=', 2) as [string, string | undefined]
      if (value !== undefined) {
        args.set(name, value)
        if (/_VERSION$/.test(name) && !FULL_VERSION.test(value))
          findings.push(`line ${line}: ARG ${name}=${value} is not a full version`)
        if (/_IMAGE$/.test(name) && !PINNED_TAG.test(value))
          findings.push(`line ${line}: ARG ${name}=${value} is not pinned to a full version or digest`)
      }
    }
    if (keyword === 'FROM') {
      const [image, as, stage] = rest.split(/\s+/)
      const resolved = (image ?? '').replace(
        /^\$\{(\w+)\}$/,
        (_, name: string) => args.get(name) ?? `<ARG ${name} without a default>`,
      )
      // scratch is Docker's reserved empty image: nothing is pulled, so nothing to pin.
      if (!stages.has(resolved) && resolved !== 'scratch' && !PINNED_TAG.test(resolved))
        findings.push(`line ${line}: FROM ${resolved} is not pinned to a full version or digest`)
      if (as?.toUpperCase() === 'AS' && stage !== undefined) stages.add(stage)
    }
    if (keyword === 'ADD') findings.push(`line ${line}: ADD (use COPY)`)
    if (/\blatest\b/.test(rest)) findings.push(`line ${line}: ${keyword} mentions latest`)
  }
  const users = all.filter((i) => i.keyword === 'USER')
  const user = users.at(-1)?.args ?? ''
  const uid = /^(\d+):(\d+)$/.exec(user)
  if (uid === null || uid[1] === '0' || uid[2] === '0')
    findings.push(`the final USER is ${JSON.stringify(user)}, not a numeric non-root uid:gid`)
  else if (
    !all.some(
      (i) => i.keyword === 'RUN' && i.args.includes(`:x:${uid[1]}:${uid[2]}:`) && i.args.includes('/etc/passwd'),
    )
  )
    findings.push(`uid ${uid[1]} gets no passwd entry`)
  const entrypoint = all.filter((i) => i.keyword === 'ENTRYPOINT').at(-1)?.args ?? ''
  let exec: unknown = null
  try {
    exec = JSON.parse(entrypoint)
  } catch {}
  if (JSON.stringify(exec) !== JSON.stringify(['node', 'builders/dist/main.js']))
    findings.push(`ENTRYPOINT ${entrypoint} is not the builder program in exec form`)
  if (!all.some((i) => i.keyword === 'COPY' && /--from=\S+ \/app\/builders\/dist \.\/builders\/dist$/.test(i.args)))
    findings.push('the compiled builder program (builders/dist) is not copied in')
  return findings
}

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

for (const language of ['js', 'go', 'rust']) {
  t.test(`builders/Dockerfile.${language} passes the checks`, async (t) => {
    const text = read(`builders/Dockerfile.${language}`)
    t.same(lintBuilderDockerfile(text), [])
    // The build Job's runAsUser and runAsGroup (control/src/cluster/build-pod.ts): another uid
    // there would run the builder as a user without the image's passwd entry.
    t.equal(
      instructions(text)
        .filter((i) => i.keyword === 'USER')
        .at(-1)?.args,
      `${BUILDER_UID}:${BUILDER_UID}`,
      "the build Job's uid and gid",
    )
  })
}

// One WASI preview 1 adapter for every build that links one: the rust image's, the local rust
// root's (scripts/rust-wasm-root.sh) and the one preinit writes for local js builds
// (worker/Cargo.toml). They import the WASI version the hosts provide; a drift would not fail a build.
t.test('the rust builds and preinit pin the same preview 1 adapter', async (t) => {
  const image = /^ARG ADAPTER_VERSION=(\S+)$/m.exec(read('builders/Dockerfile.rust'))?.[1]
  const root = /^ADAPTER_VERSION=(\S+)$/m.exec(read('scripts/rust-wasm-root.sh'))?.[1]
  const preinit = /^wasi-preview1-component-adapter-provider = "=(\S+)"$/m.exec(read('worker/Cargo.toml'))?.[1]
  t.match(image, FULL_VERSION)
  t.equal(root, image, 'scripts/rust-wasm-root.sh')
  t.equal(preinit, image, 'worker/Cargo.toml')
})

t.test('each check finds what it is for', async (t) => {
  const good = read('builders/Dockerfile.js')
  const cases: Array<[string, string, RegExp]> = [
    [
      'a floating base tag',
      good.replace(/^ARG BASE_IMAGE=.*$/m, 'ARG BASE_IMAGE=node:24-trixie-slim'),
      /ARG BASE_IMAGE=node:24-trixie-slim is not pinned/,
    ],
    ['an untagged FROM', `${good}\nFROM debian\n`, /FROM debian is not pinned/],
    ['latest', good.replace(/^ARG BASE_IMAGE=.*$/m, 'ARG BASE_IMAGE=node:latest'), /mentions latest/],
    ['a floating toolchain version', `ARG GO_VERSION=1.24\n${good}`, /ARG GO_VERSION=1\.24 is not a full version/],
    ['ADD', good.replace('COPY package.json ./\n', 'ADD package.json ./\n'), /ADD \(use COPY\)/],
    ['root', good.replace('USER 10001:10001', 'USER 0:0'), /not a numeric non-root/],
    ['a user name', good.replace('USER 10001:10001', 'USER builder'), /not a numeric non-root/],
    ['no passwd entry', good.replace(/>> \/etc\/passwd/, '>> /etc/motd'), /uid 10001 gets no passwd entry/],
    [
      'a shell-form entrypoint',
      good.replace(/^ENTRYPOINT .*$/m, 'ENTRYPOINT node builders/dist/main.js'),
      /not the builder program in exec form/,
    ],
    [
      'another program',
      good.replace(/^ENTRYPOINT .*$/m, 'ENTRYPOINT ["node", "control/dist/main.js"]'),
      /not the builder program in exec form/,
    ],
  ]
  for (const [what, text, finding] of cases) t.match(lintBuilderDockerfile(text).join('\n'), finding, what)
})

t.test('continuation lines are joined and comments dropped', async (t) => {
  t.same(instructions('# c\nRUN a \\\n  # inside\n  && b\n\nUSER 1:1\n'), [
    { keyword: 'RUN', args: 'a && b', line: 2 },
    { keyword: 'USER', args: '1:1', line: 6 },
  ])
})
