// The connection setup's one HTTP step: a session on the server under test for each pair.

export async function createSession(
  url: string,
  token?: string,
): Promise<{ id: string; initiator_token: string; responder_token: string }> {
  const response = await fetch(`${url}/admin/sessions`, {
    method: 'POST',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  })
  if (response.status !== 201) throw new Error(`POST /admin/sessions answered ${response.status}`)
  return (await response.json()) as { id: string; initiator_token: string; responder_token: string }
}
