// The end-user of an RFC 8628 device login, played over HTTP against the OpenID provider
// fixture's real pages: open the verification URI, submit the code, confirm (or abort), and
// follow the redirects through the login interaction to the provider's success page.

type Jar = Map<string, string>

async function go(jar: Jar, url: string, form?: Record<string, string>): Promise<Response> {
  const headers: Record<string, string> = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') }
  const response = await fetch(url, {
    method: form === undefined ? 'GET' : 'POST',
    headers,
    redirect: 'manual',
    ...(form === undefined ? {} : { body: new URLSearchParams(form) }),
  })
  for (const cookie of response.headers.getSetCookie()) {
    const [pair] = cookie.split(';')
    const at = pair?.indexOf('=') ?? -1
    if (pair !== undefined && at > 0) jar.set(pair.slice(0, at), pair.slice(at + 1))
  }
  return response
}

function formOf(html: string, base: string): { action: string; fields: Record<string, string> } {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]
  if (action === undefined) throw new Error(`no form on the page: ${html.slice(0, 300)}`)
  const fields: Record<string, string> = {}
  for (const match of html.matchAll(/<input[^>]*name="([^"]+)"[^>]*>/g)) {
    const value = /value="([^"]*)"/.exec(match[0])?.[1]
    if (match[1] !== undefined && value !== undefined) fields[match[1]] = value
  }
  return { action: new URL(action, base).href, fields }
}

/** Approves (or with deny, aborts) the login shown at `verificationUri` for `userCode`; returns the last page. */
export async function actAsUser(
  verificationUri: string,
  userCode: string,
  opts: { deny?: boolean } = {},
): Promise<string> {
  const jar: Jar = new Map()
  const entry = await go(jar, verificationUri)
  const input = formOf(await entry.text(), verificationUri)
  const confirmPage = await go(jar, input.action, { ...input.fields, user_code: userCode })
  const confirm = formOf(await confirmPage.text(), input.action)
  const fields = { ...confirm.fields }
  if (opts.deny === true) {
    delete fields.confirm
    fields.abort = 'yes'
  }
  let response = await go(jar, confirm.action, fields)
  let url = confirm.action
  // redirects through the login interaction, and the pages a browser would submit by script
  // (the provider ends the login session it made for the approval)
  for (let hops = 0; hops < 20; hops++) {
    if (response.status >= 300 && response.status < 400) {
      url = new URL(response.headers.get('location') ?? '', url).href
      await response.body?.cancel()
      response = await go(jar, url)
      continue
    }
    const page = await response.text()
    if (response.status !== 200) throw new Error(`device approval ended with ${response.status}: ${page.slice(0, 300)}`)
    if (!page.includes('document.forms[0].submit()')) return page
    const next = formOf(page, url)
    url = next.action
    response = await go(jar, url, next.fields)
  }
  throw new Error('device approval: too many steps')
}
