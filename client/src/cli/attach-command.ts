// relay attach: stdin to the peer, the peer to stdout.
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { attach } from '../attach.js'
import type { Connection } from '../connection.js'
import { RelayError } from '../errors.js'
import { parseCommand } from './args.js'
import type { Io } from './context.js'
import { progressLine } from './progress.js'
import { recreateByCommand } from './recreate-command.js'
import { drained, pipeStream, WINDOW_OVERRUN } from './stream.js'
import { HELP, UsageError } from './usage.js'

const WINDOW_MIB = 4

export async function attachCommand(args: string[], io: Io): Promise<number> {
  const help = HELP.attach as string
  let parsed
  try {
    parsed = parseCommand(args, {
      server: { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      text: { type: 'boolean' },
      'recreate-command': { type: 'string' },
    })
  } catch (error) {
    throw new UsageError((error as Error).message, help)
  }
  const { values, positionals } = parsed
  if (positionals.length !== 1) throw new UsageError('relay attach needs one URL (ws(s)://host/relay/ID)', help)
  const url = positionals[0] as string
  if (!/^wss?:\/\//.test(url)) throw new UsageError(`not a ws:// or wss:// URL: ${url}`, help)
  const token = await tokenOf(values.token, values['token-file'], io, help)

  const progress = progressLine(io)
  let onReattached = () => {}
  const recreateCommand = values['recreate-command']
  const connection = await attach(url, token, {
    ...(recreateCommand === undefined ? {} : { recreate: recreateByCommand(recreateCommand, io.env) }),
    onEvent: (event) => {
      if (event.type === 'drop') progress.note('connection dropped; reattaching')
      else if (event.type === 'recreate') progress.note('relay shutting down; running --recreate-command')
      else {
        progress.note(`reattached after ${event.attempts} attempt(s)`)
        onReattached()
      }
    },
  })
  progress.note('attached')
  // stdout gone (the reader exited, EPIPE): nothing more can be delivered; end the session so
  // the sender learns it, instead of dying on an unhandled error
  let stdoutFailed = false
  io.stdout.on('error', () => {
    stdoutFailed = true
    void connection.close(1000, 'receiver output closed')
  })
  try {
    if (values.text === true) return await textMode(connection, io)
    const stream = pipeStream(connection, io, progress.update)
    onReattached = stream.reattached
    const result = await stream.done
    progress.end()
    if (result.overrun) {
      io.stderr.write(
        `relay: the peer sent more than the window it was given (${WINDOW_MIB} MiB unacknowledged): the session was closed with ${WINDOW_OVERRUN}\n`,
      )
      return 1
    }
    if (stdoutFailed) {
      io.stderr.write('relay: stdout was closed before everything was written\n')
      return 1
    }
    if (!result.complete) {
      io.stderr.write('relay: the peer closed before everything was delivered\n')
      return 1
    }
    return 0
  } catch (error) {
    progress.end()
    throw error
  }
}

async function textMode(connection: Connection, io: Io): Promise<number> {
  const reading = (async () => {
    // Not read on while stdout is full: the connection pauses its socket instead of buffering.
    for await (const message of connection) {
      const more = message.type === 'text' ? io.stdout.write(`${message.data}\n`) : io.stdout.write(message.data)
      if (!more) await drained(io.stdout)
    }
  })()
  const lines = createInterface({ input: io.stdin, crlfDelay: Infinity })
  const writing = (async () => {
    for await (const line of lines) await connection.send(line)
    await connection.close(1000, 'done')
  })()
  // Whichever ends first: our stdin (we close) or the peer's close.
  await Promise.race([reading, writing.then(() => reading)])
  lines.close()
  await new Promise<void>((resolve) => io.stdout.write('', () => resolve()))
  return 0
}

async function tokenOf(flag: string | undefined, file: string | undefined, io: Io, help: string): Promise<string> {
  if (flag !== undefined && file !== undefined) throw new UsageError('give --token or --token-file, not both', help)
  let token = flag
  if (file !== undefined) {
    try {
      token = (await readFile(file, 'utf8')).trim()
    } catch (error) {
      throw new RelayError(
        'bad_request',
        `cannot read --token-file ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      )
    }
  }
  token ??= io.env.RELAY_TOKEN
  if (token === undefined || token === '')
    throw new UsageError('no slot token: pass --token, --token-file or set RELAY_TOKEN', help)
  return token
}
