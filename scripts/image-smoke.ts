// The relay and control images: how each is built (podman build --isolation=chroot on the
// stand-in base) and run in its read-only root as its USER, and the checks made from outside.
import { copyFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { largest } from './image-build-run.js'
import { exerciseControl, exerciseRelay } from './image-exercise.js'
import type { Podman, UndoStack } from './image-host.js'
import { cacheDir, repo } from './image-paths.js'
import { check, log, timed } from './image-report.js'
import { imageEnv, inspectImage, mountImageRoot, numericUser, startInRoot } from './image-root.js'
import { checkContents, UWS_BINARY } from './image-contents.js'
import { refusalOnThisHost, relaySuiteInRoot } from './image-relay-root.js'
import type { ImageSpec, Running } from './image-running.js'
import { freePort, healthcheck, processIds, waitForHealth } from './image-running.js'

export const IMAGES: ImageSpec[] = [
  {
    name: 'relay',
    dockerfile: 'Dockerfile.relay',
    addressVariable: 'RELAY_ADDR',
    // A 1 s drain: SIGTERM then ends an open session with 1001 within the exit wait.
    env: (port) => ({
      RELAY_NO_AUTH: 'true',
      RELAY_PUBLIC_BASE_URL: `ws://127.0.0.1:${port}`,
      RELAY_DRAIN_TIMEOUT: '1s',
    }),
    present: ['relay/dist/main.js', 'relay/dist/healthcheck.js', `node_modules/uWebSockets.js/${UWS_BINARY}`],
    absent: [
      'control',
      'spin',
      'builders',
      'host',
      'dist',
      ...['fastify', '@electric-sql/pglite', 'pg', '@kubernetes/client-node', 'prom-client'].map(
        (name) => `node_modules/${name}`,
      ),
    ],
    exercise: exerciseRelay,
  },
  {
    name: 'control',
    dockerfile: 'Dockerfile.control',
    addressVariable: 'PLATFORM_ADDR',
    env: () => ({ PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true' }),
    present: [
      'control/dist/main.js',
      'control/dist/healthcheck.js',
      'spin/templates/js',
      'dist/console/index.html',
      'node_modules/@electric-sql/pglite',
      'bin/worker',
    ],
    // The worker stage is the checkout's cargo build (npm run build made it): its own cargo build
    // would take 10-15 minutes of two cores, and its Rust image cannot be pulled here.
    buildContexts: (workDir) => ({ worker: builtWorker(workDir) }),
    // The wasm toolchain too: builds run in Jobs with the builder images (builders/).
    absent: [
      'relay',
      'builders',
      'host',
      'dist/scripts',
      'dist/bench',
      ...[
        'uWebSockets.js',
        '@spinframework/build-tools',
        '@bytecodealliance/componentize-js',
        '@bytecodealliance/jco',
        'binaryen',
        'esbuild',
      ].map((name) => `node_modules/${name}`),
    ],
    exercise: exerciseControl,
  },
]

/** A directory holding the checkout's worker binary as `worker`, what Dockerfile.control's worker stage makes. */
function builtWorker(workDir: string): string {
  const dir = join(workDir, 'worker-context')
  mkdirSync(dir, { recursive: true })
  copyFileSync(join(repo, '.cache', 'worker', 'target', 'release', 'worker'), join(dir, 'worker'))
  return dir
}

export async function testImage(
  spec: ImageSpec,
  podman: Podman,
  baseImage: string,
  workDir: string,
  parentUndo: UndoStack,
): Promise<void> {
  const tag = `localhost/session-relay/${spec.name}:test`
  const contexts = Object.entries(spec.buildContexts?.(workDir) ?? {}).flatMap(([name, dir]) => [
    '--build-context',
    `${name}=${dir}`,
  ])
  await timed(`build ${spec.name}`, () =>
    podman(
      [
        'build',
        '--isolation=chroot',
        '--format=docker',
        '--pull=never',
        ...contexts,
        '--build-arg',
        `BASE_IMAGE=${baseImage}`,
        '-f',
        spec.dockerfile,
        '-t',
        tag,
        '.',
      ],
      { cwd: repo, logFile: join(cacheDir, 'logs', `build-${spec.name}.log`) },
    ),
  )
  check(true, `${spec.name}: podman build --isolation=chroot -f ${spec.dockerfile}`)

  const config = await inspectImage(podman, tag)
  log(
    `${spec.name}: ${(config.size / 1024 / 1024).toFixed(0)} MiB, USER ${config.user}, WORKDIR ${config.workingDir}, ENTRYPOINT ${JSON.stringify(config.entrypoint)}, VOLUME ${JSON.stringify(config.volumes)}`,
  )
  const owner = numericUser(config.user)
  if (
    !check(
      owner !== null && owner.uid !== 0 && owner.gid !== 0,
      `${spec.name}: USER is a numeric non-root uid:gid (runAsNonRoot can verify it)`,
      config.user,
    )
  )
    return
  check(
    config.healthcheck[0] === 'CMD' || config.healthcheck[0] === 'CMD-SHELL',
    `${spec.name}: declares a HEALTHCHECK`,
    config.healthcheck,
  )

  const undo = parentUndo.nested(`${spec.name}: mounts and processes`)
  try {
    const root = await mountImageRoot(podman, tag, config, owner!, workDir, undo)
    checkContents(spec, root, config)
    await largest({ log }, join(root.dir, config.workingDir, 'node_modules'), `${spec.name}: node_modules`)

    const port = await freePort()
    const env = imageEnv(config, { [spec.addressVariable]: `127.0.0.1:${port}`, ...spec.env(port) })
    const started = startInRoot(root, config, owner!, [...config.entrypoint, ...config.cmd], env, undo)
    const running: Running = { port, root, config, owner: owner!, process: started, undo }

    const health = await timed(`${spec.name}: start until /healthz answers`, () => waitForHealth(port, started))
    check(
      health.status === 200 && (await health.text()) === 'ok',
      `${spec.name}: entrypoint started in a read-only root; GET /healthz 200 ok`,
    )
    const ids = processIds(started.pid)
    const expected = String(owner!.uid)
    check(
      ids.uid.split(/\s+/).every((id) => id === expected) &&
        ids.gid.split(/\s+/).every((id) => id === String(owner!.gid)),
      `${spec.name}: the process runs as uid ${owner!.uid} gid ${owner!.gid}, not root`,
      ids,
    )
    check((await healthcheck(running, env)) === 0, `${spec.name}: the image's HEALTHCHECK passes while it serves`)

    await spec.exercise(running)

    check((await healthcheck(running, env)) !== 0, `${spec.name}: the HEALTHCHECK fails once the process has stopped`)
    const lines = started
      .stdout()
      .split('\n')
      .filter((line) => line !== '')
    check(
      lines.length > 0 &&
        lines.every((line) => {
          try {
            JSON.parse(line)
            return true
          } catch {
            return false
          }
        }),
      `${spec.name}: logs are JSON lines on stdout`,
      lines.slice(0, 3),
    )
    check(started.stderr() === '', `${spec.name}: nothing on stderr`, started.stderr().slice(0, 500))
    if (spec.name === 'relay') {
      await timed("relay: its test files on the image's Node 24", () => relaySuiteInRoot(root, config, undo))
      await refusalOnThisHost(root)
    }
  } finally {
    const failures = undo.unwind()
    check(failures.length === 0, `${spec.name}: every mount and process undone`, failures)
  }
}
