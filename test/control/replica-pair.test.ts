// Two control-plane processes on one PostgreSQL and one cluster, the real API server
// (test/helpers/kube-apiserver.ts), behave as one: 40 builds started alternately on both while
// their watches are ended and restarted, Jobs ending in random order; every build succeeds
// exactly once, none fails, each deployment is applied, the two /metrics add up to 40, and a
// build's log can be followed from either process. Both reach the API server through a proxy
// that ends their watches and nothing else (test/helpers/kube-watch-proxy.ts); the test plays
// the Job controller and the kubelet (test/fixtures/kube-real.ts). PGlite cannot be shared by
// two processes, so this runs on PostgreSQL: TEST_DATABASE_URL (npm test sets it), else a
// throwaway server of its own (scripts/test-postgres.sh).
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import t from 'tap'
import type { Test } from 'tap'
import { kubeletOf, realCluster, runJob, SPINAPP, startKubelet, succeedJob } from '../fixtures/kube-real.js'
import { BUILDERS, REPOSITORY, tempDir } from '../helpers/cluster.js'
import { controlProcess } from '../helpers/control-process.js'
import { call, until } from '../helpers/control.js'
import type { App } from '../helpers/control.js'
import { kubeNamespace } from '../helpers/kube-apiserver.js'
import { kubeWatchProxy } from '../helpers/kube-watch-proxy.js'

const BUILDS = 40
// Two control plane starts (120 s bound each, test/helpers/process.ts), the API server's start,
// 40 builds, a PostgreSQL of its own when npm test has not started one (docs/testing.md has the
// time measured).
t.setTimeout(420_000)
const SCRIPT = fileURLToPath(new URL('../../scripts/test-postgres.sh', import.meta.url))

/** A PostgreSQL URL with a schema of its own for this test, dropped at the end. */
async function postgresSchema(t: Test): Promise<string> {
  let base = process.env.TEST_DATABASE_URL ?? ''
  if (base === '') {
    const out = execFileSync('bash', [SCRIPT], { encoding: 'utf8' })
    const value = (name: string): string => out.match(new RegExp(`^${name}=(.*)$`, 'm'))?.[1] ?? ''
    const dir = value('TEST_POSTGRES_DIR')
    t.teardown(() => {
      execFileSync('bash', [SCRIPT, 'stop', dir])
    })
    base = value('TEST_DATABASE_URL')
  }
  const schema = `pair_${randomBytes(6).toString('hex')}`
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: base })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  await admin(`CREATE SCHEMA ${schema}`)
  t.teardown(() => admin(`DROP SCHEMA ${schema} CASCADE`))
  const url = new URL(base)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

/** A fixed-seed generator (mulberry32): the same "random" order on every run. */
function seeded(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const counter = (exposition: string, result: string): number =>
  Number(
    exposition.match(new RegExp(`^platform_builds_finished_total\\{result="${result}"\\} (\\d+)$`, 'm'))?.[1] ?? NaN,
  )

t.test(
  'two replicas on one database: every build succeeds exactly once, deployed, counted once, its log followable from either',
  async (t) => {
    const databaseUrl = await postgresSchema(t)
    const dir = tempDir(t)
    const kube = realCluster(await kubeNamespace(t, dir))
    await startKubelet(t, kube)
    // A proxy of its own for each replica, as each has its own connection to the API server.
    const [one, two] = [await kubeWatchProxy(t, kube, tempDir(t)), await kubeWatchProxy(t, kube, tempDir(t))]
    const proxies = [one, two]
    const endWatches = (): void => {
      for (const proxy of proxies) proxy.endWatches()
    }
    const flags = (kubeconfig: string): string[] => [
      '--addr',
      '127.0.0.1:0',
      '--dev-insecure-skip-auth',
      '--database-url',
      databaseUrl,
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      kube.namespace,
      '--builder-images',
      BUILDERS,
      '--image-repository',
      REPOSITORY,
      '--log-level',
      'info',
      // Every build here is the default tenant's, all pending at once: the replicas are the subject, not the share.
      '--max-tenant-builds',
      '1000',
    ]
    // One after the other: both migrate, the second finds nothing to do.
    const first = await controlProcess.start(t, flags(one.kubeconfig))
    const second = await controlProcess.start(t, flags(two.kubeconfig))
    const replicas = [first, second].map((p) => `http://127.0.0.1:${p.port}`)
    // A bound for a hung watch, not an expectation: the watches open right after the listen.
    // Two each: the build Jobs' and the SpinApps' (cluster/spinapp-watch.ts).
    await until(() => proxies.every((proxy) => proxy.watches() === 2), 60_000, 'both replicas watch the build Jobs')

    const builds: Array<{ app: App; buildId: string; image: string }> = []
    for (let i = 0; i < BUILDS; i++) {
      const base = replicas[i % 2] as string
      const created = await call(base, 'POST', '/applications', {
        json: { name: `app-${i}`, language: 'go', runtime: 'wasmkube' },
      })
      t.equal(created.status, 201)
      const app = created.body as App
      const started = await call(base, 'POST', `/applications/${app.id}/builds`)
      t.equal(started.status, 202, `build ${i} started on replica ${i % 2}`)
      const buildId = (started.body as { id: string }).id
      builds.push({ app, buildId, image: `${REPOSITORY}/app-${i}@sha256:${buildId.replace(/-/g, '').padEnd(64, '0')}` })
      // Both replicas lose their watch and list again, with builds being created all along.
      endWatches()
    }

    // The first build's log, followed from both replicas while it runs.
    const watched = builds[0] as (typeof builds)[number]
    const pod = await runJob(kube, `build-${watched.buildId}`)
    kubeletOf(kube).write(pod.metadata.name, 'compiling\n')
    const followers = await Promise.all(
      replicas.map(async (base) => {
        const response = await fetch(
          `${base}/api/v1/applications/${watched.app.id}/builds/${watched.buildId}/logs?follow=true`,
        )
        t.equal(response.status, 200)
        const reader = (response.body as ReadableStream<Uint8Array>).getReader()
        t.equal(
          Buffer.from((await reader.read()).value ?? []).toString(),
          'compiling\n',
          'the log so far, from either replica',
        )
        return reader
      }),
    )

    const random = seeded(22)
    const order = builds.map((b) => b).sort(() => random() - 0.5)
    for (const [n, build] of order.entries()) {
      await succeedJob(kube, `build-${build.buildId}`, build.image)
      if (n % 5 === 0) endWatches()
    }
    for (const reader of followers) {
      let rest = ''
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done) break
        rest += Buffer.from(chunk.value).toString()
      }
      t.equal(rest, '', 'the stream ends when the build pod exits')
    }

    await until(
      async () => {
        const statuses = await Promise.all(
          builds.map(
            async (b, i) =>
              (
                (await call(replicas[i % 2] as string, 'GET', `/applications/${b.app.id}/builds/${b.buildId}`))
                  .body as { status: string }
              ).status,
          ),
        )
        return statuses.every((s) => s === 'succeeded' || s === 'failed')
      },
      60_000,
      'every build ended',
    )

    for (const [i, build] of builds.entries()) {
      const other = replicas[(i + 1) % 2] as string
      const seen = (await call(other, 'GET', `/applications/${build.app.id}/builds/${build.buildId}`)).body as {
        status: string
        imageRef: string
      }
      t.equal(seen.status, 'succeeded', `build ${i} succeeded (as the other replica sees it)`)
      t.equal(seen.imageRef, build.image)
      t.match(
        await kube.get(SPINAPP, `app-${i}`),
        { spec: { image: build.image } },
        `app-${i} deployed with its build's image`,
      )
    }
    const finished = [...first.logs, ...second.logs].filter((l) => l.msg === 'build finished')
    for (const build of builds)
      t.equal(
        finished.filter((l) => l.buildId === build.buildId).length,
        1,
        `build ${build.buildId.slice(0, 8)} ended once, on one replica`,
      )
    t.equal(finished.filter((l) => l.status === 'failed').length, 0, 'none failed')

    const expositions = await Promise.all(replicas.map(async (base) => (await fetch(`${base}/metrics`)).text()))
    t.equal(
      expositions.reduce((sum, text) => sum + counter(text, 'succeeded'), 0),
      BUILDS,
      'the two /metrics count 40 successes together',
    )
    t.equal(
      expositions.reduce((sum, text) => sum + counter(text, 'failed'), 0),
      0,
      'and no failure',
    )
    const followed = await call(
      replicas[1] as string,
      'GET',
      `/applications/${watched.app.id}/builds/${watched.buildId}/logs?follow=true`,
    )
    t.equal(followed.text, 'compiling\n', 'the finished log, from the database')

    // Stopped here, before the schema is dropped.
    for (const replica of [first, second]) {
      replica.child.kill('SIGTERM')
      t.match(await replica.exited, { code: 0 }, 'exits cleanly')
    }
  },
)
