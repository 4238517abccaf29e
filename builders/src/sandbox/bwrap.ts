// Every build step of the local runtime runs in a bubblewrap sandbox (Debian's `bubblewrap`):
// new mount, pid, IPC, UTS, cgroup and network namespaces, a read-only root made only of the
// toolchain, the function's private copy writable, nothing else of the machine, an empty
// environment plus what the step needs, resource limits and no way to gain privileges.
//
// Who the step runs as: uid and gid 65534 (nobody), with no capabilities and no_new_privs.
// - When the builder runs as root (the local runtime as documented), bwrap runs privileged: it
//   sets the mounts up as root and `setpriv` drops to the real uid 65534 before the step's
//   command. No user namespace, on purpose: one made by root maps the sandbox's user to root
//   outside, whose files it could then open wherever a bind shows them, and whose processes
//   RLIMIT_NPROC never counts; a real uid 65534 is an ordinary unprivileged user to the kernel.
// - Otherwise (a developer's own user), bwrap makes a user namespace in which the step is
//   65534, mapped to that user outside, and forbids further user namespaces inside.
// prlimit sets RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_NPROC first; the wall-clock
// deadline and the output cap are run-step.ts's.
import { dirname } from 'node:path'
import type { Step } from '../run-step.js'

export const SANDBOX_UID = 65534

export type SandboxLimits = {
  /** RLIMIT_CPU of each process, seconds. */
  cpuSeconds: number
  /** RLIMIT_AS of each process, bytes. */
  addressSpaceBytes: number
  /** RLIMIT_FSIZE: the largest file a step may write, bytes. */
  fileSizeBytes: number
  /** RLIMIT_NPROC: processes of the sandbox's user. */
  processes: number
  /** Size of the private /tmp. */
  tmpBytes: number
  /**
   * Every process of the step at the lowest CPU priority: its session's autogroup and its own
   * nice at 19. The machine's js engine seed made at the start, behind whatever else runs.
   */
  lowestPriority: boolean
}

export type Bind = { from: string; to: string }

export type SandboxSpec = {
  /** What `/` is: the machine's /usr (with /bin, /lib, /lib64, /sbin as on a merged-/usr system), or a toolchain root directory. */
  root: { kind: 'host' } | { kind: 'dir'; path: string }
  readOnly: Bind[]
  writable: Bind[]
  /** Directory inside the sandbox the command starts in. */
  cwd: string
  /** The step's whole environment. */
  env: Record<string, string>
  /** Whether the step may reach the fetch proxy (its socket is among the binds); no other network either way. */
  network: boolean
  limits: SandboxLimits
  /** Whether the builder runs as root (bwrap privileged, setpriv drops to 65534). */
  privileged: boolean
}

/** /etc files a toolchain may read that say nothing about the machine's users or secrets. */
const HOST_ETC = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/localtime', '/etc/nsswitch.conf']

/** The bwrap command that runs `command args` inside the sandbox. */
export function sandboxCommand(
  spec: SandboxSpec,
  command: string,
  args: string[],
): { command: string; args: string[] } {
  const bwrap: string[] = [
    '--die-with-parent',
    '--new-session',
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'build',
    '--clearenv',
  ]
  if (spec.root.kind === 'host') {
    bwrap.push('--ro-bind', '/usr', '/usr')
    for (const link of ['bin', 'lib', 'lib64', 'sbin']) bwrap.push('--symlink', `usr/${link}`, `/${link}`)
  } else {
    bwrap.push('--ro-bind', spec.root.path, '/')
  }
  // /run is where a fetch step finds the proxy's socket (a read-only root has no file to bind over).
  bwrap.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--perms',
    '1777',
    '--size',
    String(spec.limits.tmpBytes),
    '--tmpfs',
    '/tmp',
  )
  bwrap.push('--size', String(64 * 1024), '--tmpfs', '/run')
  // Privileged bwrap makes a bind's missing parents 0700 root, which uid 65534 cannot traverse:
  // they are made first, world-readable (a later bind over one hides it).
  if (spec.root.kind === 'host') {
    for (const dir of parents(spec)) bwrap.push('--perms', '0755', '--dir', dir)
    for (const path of HOST_ETC) bwrap.push('--ro-bind-try', path, path)
  }
  for (const { from, to } of spec.readOnly) bwrap.push('--ro-bind', from, to)
  for (const { from, to } of spec.writable) bwrap.push('--bind', from, to)
  for (const [name, value] of Object.entries(spec.env)) bwrap.push('--setenv', name, value)
  bwrap.push('--chdir', spec.cwd)
  const inside: string[] = spec.limits.lowestPriority ? ['/bin/sh', '-c', LOWEST_PRIORITY, 'sh'] : []
  if (spec.privileged) {
    bwrap.push('--cap-add', 'CAP_SETUID,CAP_SETGID')
    inside.push(
      'setpriv',
      `--reuid=${SANDBOX_UID}`,
      `--regid=${SANDBOX_UID}`,
      '--clear-groups',
      '--bounding-set=-all',
      '--inh-caps=-all',
      '--no-new-privs',
      '--',
    )
  } else {
    bwrap.push('--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), '--disable-userns')
  }
  const { limits } = spec
  return {
    command: 'prlimit',
    args: [
      // The soft limit a second under the hard one: at the soft limit the kernel sends SIGXCPU,
      // which ends a process that does not handle it and tells its parent why (cargo and go say
      // so, run-step.ts names the limit); at the hard limit, SIGKILL without a word.
      `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
      `--as=${limits.addressSpaceBytes}`,
      `--fsize=${limits.fileSizeBytes}`,
      `--nproc=${limits.processes}`,
      '--',
      'bwrap',
      ...bwrap,
      '--',
      ...inside,
      command,
      ...args,
    ],
  }
}

// bwrap's --new-session gives the step a session, and so an autogroup, of its own at nice 0:
// with autogroups on, the kernel shares the CPU between those first, so a nice of the
// builder's own would not reach the step. The step's first process lowers its new autogroup
// (allowed to any owner; the kernel takes one such change a tenth of a second machine-wide,
// so it tries again for two seconds) and its own nice, which every process it starts keeps.
// It runs before setpriv, as root when the builder is: its programs by absolute path, from the
// read-only root, whatever the step's PATH says.
const LOWEST_PRIORITY =
  'i=0; while [ -e /proc/self/autogroup ] && ! { echo 19 >/proc/self/autogroup; } 2>/dev/null && [ $i -lt 20 ]; ' +
  'do i=$((i + 1)); /usr/bin/sleep 0.11; done; exec /usr/bin/nice -n 19 "$@"'

const MADE = new Set(['/', '/usr', '/proc', '/dev', '/tmp', '/run'])

/** Every parent directory of a bind's destination, shortest first. */
function parents(spec: SandboxSpec): string[] {
  const dirs = new Set<string>(['/etc'])
  for (const { to } of [...spec.readOnly, ...spec.writable]) {
    for (let dir = dirname(to); !MADE.has(dir) && dir !== dirname(dir); dir = dirname(dir)) dirs.add(dir)
  }
  return [...dirs].sort((a, b) => a.length - b.length)
}

/**
 * The step run in the sandbox: the same name, bwrap's command, no environment of the builder's
 * own. bwrap starts in the step's directory on the builder's side and changes to `spec.cwd`.
 */
export function sandboxedStep(step: Step, spec: SandboxSpec): Step {
  const { command, args } = sandboxCommand(spec, step.command, step.args)
  // bwrap and prlimit are found on the builder's PATH; the step's environment is set inside.
  const shown = `${step.shown ?? [step.command, ...step.args].join(' ')} (sandboxed, ${spec.network ? 'network through the fetch proxy' : 'no network'})`
  return {
    name: step.name,
    command,
    args,
    cwd: step.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    shown,
    cpuSeconds: spec.limits.cpuSeconds,
  }
}
