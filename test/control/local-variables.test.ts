// Variables reach a function on the local runtime without a rebuild (one real j2w build of the
// js template, then the real worker): deploy with a value, invoke, deploy with another
// value and invoke again, the new value answers; a new name is declared by re-locking the same
// compiled layers, and the function's declared default answers when its name is unset; no value appears in the control plane's log or the worker's.
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t from 'tap'
import { createLocalHosts } from '@session-relay/control/local/hosts'
import { createLogger } from '@session-relay/control/logger'
import { templateFiles } from '@session-relay/spin/templates'
import { runBuilder, sourceArchive } from '../helpers/spin-processes.js'
import { until } from '../helpers/wait.js'
import { WORKER_BIN } from '../helpers/worker-probe.js'

const BUILD_TIMEOUT = 240_000

t.test(
  'a new value and a new name take effect with a restart, not a rebuild',
  { timeout: BUILD_TIMEOUT },
  async (t) => {
    const dir = t.testdir({ image: {}, worker: {}, compiled: {} })
    // The template's variables.toml with a default of this test's own.
    const files = templateFiles('js', 'hello')
    t.match(files['variables.toml'], /^greeting = \{ default = "hello" \}$/m, 'the template declares greeting')
    files['variables.toml'] = 'greeting = { default = "hi-by-default" }\n'
    const archive = await sourceArchive(t, { name: 'demo', language: 'js' }, [
      { name: 'hello', route: '/hello/...', files },
    ])
    const build = await runBuilder(t, {
      SOURCE_ARCHIVE: archive,
      IMAGE_REF: `oci-layout:${join(dir, 'image')}:b1`,
      APPLICATION: 'demo',
      LANGUAGE: 'js',
      BUILD_ID: 'b1',
    })
    t.equal(build.code, 0, build.code === 0 ? 'the template builds' : build.log)
    const image = build.termination.trim()

    const logs: string[] = []
    const logger = createLogger(
      'debug',
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(chunk.toString('utf8'))
          done()
        },
      }),
    )
    const hosts = createLocalHosts({
      logger,
      dir: join(dir, 'worker'),
      worker: () => WORKER_BIN,
      cacheDir: join(dir, 'compiled'),
    })
    t.teardown(() => hosts.close())
    // A redeploy is atomic: the previous version answers until the new one is ready.
    const greet = async (): Promise<string> => {
      await until(() => hosts.status('app')?.ready === true, 60_000, 'the deployment ready')
      const url = await hosts.url('app', 60_000)
      if (typeof url !== 'string') throw new Error(`not running: ${String(url)}`)
      return (await fetch(`${url}/hello`)).text()
    }

    await hosts.deploy({ id: 'app' }, image)
    t.equal(await greet(), 'hi-by-default from hello\n', 'no variables: the default the function declares')
    t.equal(hosts.status('app')?.image, image, 'the artifact as built')

    let started = Date.now()
    await hosts.deploy({ id: 'app' }, image, { greeting: 'howdy-value-one' })
    t.equal(await greet(), 'howdy-value-one from hello\n', 'the value, through fermyon:spin/variables')
    t.comment(`relock + restart + first answer: ${Date.now() - started} ms`)
    const relocked = hosts.status('app')?.image
    t.match(relocked, /^oci-layout:.*@sha256:[0-9a-f]{64}$/)
    t.equal(relocked, image, 'greeting, declared by the function already: the artifact as built')

    started = Date.now()
    await hosts.deploy({ id: 'app' }, image, { greeting: 'bonjour-value-two' })
    t.equal(await greet(), 'bonjour-value-two from hello\n', 'a new value: a restart, no rebuild')
    t.comment(`new value, restart + first answer: ${Date.now() - started} ms`)
    t.equal(hosts.status('app')?.image, relocked, 'the same names: the same relocked artifact')

    await hosts.deploy({ id: 'app' }, image, { greeting: 'hola-value-three', api_key: 'sk-value-four' })
    t.equal(await greet(), 'hola-value-three from hello\n', 'a new name declared without a rebuild')
    t.not(hosts.status('app')?.image, relocked)

    await hosts.deploy({ id: 'app' }, image, { api_key: 'sk-value-four' })
    t.equal(await greet(), 'hi-by-default from hello\n', 'greeting unset again: its declared default')

    // The guest's output reaches the log through the worker's stderr, after its answer: followed
    // until the line arrives (or the log ends) rather than read once; no deadline of its own.
    const appLog = await new Promise<string>((resolve) => {
      let text = ''
      const stream = hosts.log('app', { follow: true })!
      stream.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8')
        if (/hello: GET \/hello/.test(text)) {
          stream.destroy()
          resolve(text)
        }
      })
      stream.on('end', () => resolve(text))
    })
    t.match(appLog, /hello: GET \/hello/, "the application's log is captured")
    const everything = logs.join('') + appLog
    t.match(logs.join(''), /"variables":\["api_key","greeting"\]/, 'names are logged')
    for (const value of ['howdy-value-one', 'bonjour-value-two', 'hola-value-three', 'sk-value-four']) {
      t.notOk(everything.includes(value), `${value} appears in no log`)
    }
  },
)
