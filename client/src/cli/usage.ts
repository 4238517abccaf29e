// Help texts and the usage error (exit code 2).

export class UsageError extends Error {
  readonly help: string

  constructor(message: string, help: string) {
    super(message)
    this.name = 'UsageError'
    this.help = help
  }
}

const COMMON = `Options for every command:
  --server URL   the relay, http(s):// or ws(s):// (default: $RELAY_SERVER)
  --help         this text

Exit codes: 0 done, 1 failure (refused, closed with an error, network), 2 usage error.`

export const HELP: Record<string, string> = {
  main: `relay: the session relay's command-line client

Usage:
  relay login [--issuer-from URL] [--client-id ID]   log in with the device flow
  relay session create|list|get ID|delete ID [--json]
  relay attach URL (--token=T | --token-file F | $RELAY_TOKEN) [--text] [--recreate-command CMD]
  relay pair                                          create a session, print two attach commands

Run "relay COMMAND --help" for one command.

${COMMON}`,
  login: `Usage: relay login [--issuer-from URL] [--client-id ID]

Logs in with the OAuth device flow (RFC 8628) at the identity provider the relay's
/.well-known/relay-config names: prints a URL and a code to enter there, waits for approval,
then keeps the tokens in $XDG_CONFIG_HOME/session-relay/tokens.json (~/.config when unset,
file mode 0600). They are refreshed without asking while the refresh token lasts.

  --issuer-from URL  read the discovery document from this relay instead of --server
  --client-id ID     OAuth client id (default: the relay's client_id_hint)

${COMMON}`,
  session: `Usage: relay session create|list|get ID|delete ID [--json] [--max-bytes N] [--bytes-per-second N] [--ttl-seconds N]

  create      create a session: its id, both slot tokens (shown only now) and expiry;
              --max-bytes N (both peers' payload in all; past it 4004), --bytes-per-second N
              (each direction's rate) and --ttl-seconds N (at most the relay's session TTL)
              limit it, within the relay's maxima
  list        every session (all pages), a table; --limit N for one page of N
  get ID      one session
  delete ID   end a session; connected peers get close code 4000

  --json      print the relay's JSON instead of a table

Needs "relay login" unless the relay runs with auth disabled.

${COMMON}`,
  attach: `Usage: relay attach URL (--token=T | --token-file F | $RELAY_TOKEN) [--text] [--recreate-command CMD]

Attaches to a session slot (URL: ws(s)://host/relay/ID) and pipes stdin to the other peer and
what it sends to stdout, byte for byte. The other side must be "relay attach" too: the bytes
travel with offsets and acknowledgements, so a slow reader slows the sender, nothing is
dropped, and a connection drop is repaired within the peer-wait window. When stdin ends the
sender closes once the peer has written everything out; the receiver exits 0 after flushing.

  tar c dir | relay attach URL --token=T1     # one terminal
  relay attach URL --token=T2 | tar x         # the other

  --token=T        the slot token (with "=": a token may start with "-"; visible in ps: prefer --token-file or $RELAY_TOKEN)
  --token-file F   read the slot token from a file
  --text           line mode, for a peer that is not relay attach (a browser, wscat): each
                   stdin line is a text message, each message received a line on stdout;
                   no acknowledgements, so no end-to-end flow control
  --recreate-command CMD
                   when the relay shuts down (close code 1001, its drain over), run CMD
                   with sh -c: it prints the new session's URL and this side's slot token,
                   separated by a space, on one line; the stream goes on there from where
                   it was. Both sides need one, agreeing on the session. Without it, 1001
                   ends the transfer

Progress (bytes, rate) goes to stderr when it is a terminal.

${COMMON}`,
  pair: `Usage: relay pair

Creates a session and prints the two "relay attach" commands that join it, one per terminal.

${COMMON}`,
}
