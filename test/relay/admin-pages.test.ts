// GET /admin/sessions in pages: `limit`, an opaque `cursor`, `next_cursor` while more remain.
import t from 'tap'
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '@session-relay/relay/session/session-pages'
import { createSession, startTestRelay } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'

type ListAnswer = { sessions: Array<{ id: string }>; next_cursor?: string }

async function list(relay: TestRelay, query = ''): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${relay.http}/admin/sessions${query}`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

async function createMany(relay: TestRelay, count: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i += 25) {
    const batch = await Promise.all(Array.from({ length: Math.min(25, count - i) }, () => createSession(relay)))
    ids.push(...batch.map((session) => session.id))
  }
  return ids
}

t.test('a walk with limit=100 over 250 sessions sees each exactly once, under creation and deletion', async (t) => {
  const relay = await startTestRelay(t)
  const before = await createMany(relay, 250)

  const first = await list(relay, '?limit=100')
  t.equal(first.status, 200)
  const page1 = first.body as ListAnswer
  t.equal(page1.sessions.length, 100, 'first page: 100')
  t.type(page1.next_cursor, 'string', 'first page: a next_cursor')

  // Meanwhile: the session the cursor points after and one not yet listed go, five new ones come.
  const listed = page1.sessions[99]!.id
  const unlisted = before.find((id) => !page1.sessions.some((session) => session.id === id))!
  for (const id of [listed, unlisted])
    t.equal((await fetch(`${relay.http}/admin/sessions/${id}`, { method: 'DELETE' })).status, 204)
  const added = await createMany(relay, 5)

  const seen = page1.sessions.map((session) => session.id)
  const sizes = [page1.sessions.length]
  let cursor = page1.next_cursor
  while (cursor !== undefined) {
    const next = await list(relay, `?limit=100&cursor=${encodeURIComponent(cursor)}`)
    t.equal(next.status, 200)
    const page = next.body as ListAnswer
    seen.push(...page.sessions.map((session) => session.id))
    sizes.push(page.sessions.length)
    cursor = page.next_cursor
    if (sizes.length > 10) throw new Error('the walk does not end')
  }
  t.same(sizes, [100, 100, 54], 'pages of 100, 100, then the 54 left (250 - 100 seen - 1 deleted + 5 new = 154)')
  t.equal(new Set(seen).size, seen.length, 'no session twice')
  const expected = [...before.filter((id) => id !== unlisted), ...added]
  t.same(
    [...seen].sort(),
    expected.sort(),
    'every session that existed for the walk, the new ones included, and none deleted before its page',
  )
})

t.test('without a limit a large table answers the default page and a cursor', async (t) => {
  const relay = await startTestRelay(t)
  await createMany(relay, DEFAULT_PAGE_SIZE + 1)
  const { status, body } = await list(relay)
  t.equal(status, 200)
  t.equal((body as ListAnswer).sessions.length, DEFAULT_PAGE_SIZE)
  t.type(body.next_cursor, 'string')
})

t.test("a small table answers the specification's shape alone", async (t) => {
  const relay = await startTestRelay(t)
  const ids = await createMany(relay, 3)
  const { status, body } = await list(relay)
  t.equal(status, 200)
  t.same(Object.keys(body), ['sessions'], 'only `sessions`: no next_cursor')
  t.same((body as ListAnswer).sessions.map((session) => session.id).sort(), ids.sort())
  const exact = await list(relay, '?limit=3')
  t.same(Object.keys(exact.body), ['sessions'], 'a page that takes the rest exactly has no next_cursor')
})

t.test("a bad limit or cursor answers 400 with the relay's error body", async (t) => {
  const relay = await startTestRelay(t)
  await createMany(relay, 2)
  const limitError = { error: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}` }
  for (const limit of ['0', String(MAX_PAGE_SIZE + 1), 'abc', '-1', '1.5', '', '1e2', '99999999999999999999']) {
    const { status, body } = await list(relay, `?limit=${encodeURIComponent(limit)}`)
    t.equal(status, 400, `limit=${limit}: 400`)
    t.same(body, limitError, `limit=${limit}: says why`)
  }
  const garbage = Buffer.from('not a position').toString('base64url')
  const wrongId = Buffer.from('1700000000000.short').toString('base64url')
  for (const cursor of [
    '',
    '!!!',
    garbage,
    wrongId,
    'A'.repeat(65),
    Buffer.from('x'.repeat(10_000)).toString('base64url'),
  ]) {
    const { status, body } = await list(relay, `?cursor=${encodeURIComponent(cursor)}`)
    t.equal(status, 400, `cursor ${cursor.slice(0, 20)}: 400`)
    t.same(body, { error: 'invalid cursor' }, `cursor ${cursor.slice(0, 20)}: says why`)
  }
})
