/**
 * How the dissector is started and how the agent checks it holds nothing
 * (pure). The agent (root with SYS_ADMIN) runs, as one exec chain:
 *
 *   unshare --net --                  a new, empty network namespace (not even loopback is up):
 *                                     no API server, no node, no pod network to reach
 *   setpriv --reuid=65534 --regid=65534 --clear-groups
 *           --inh-caps=-all --ambient-caps=-all --bounding-set=-all
 *           --no-new-privs --pdeathsig=KILL --
 *                                     nobody, no capability in any set (so none after exec), no way
 *                                     to gain one (no_new_privs), and gone with the agent
 *   node [the agent's node flags] <dissect entry>
 *
 * unshare needs CAP_SYS_ADMIN (which the agent has for setns), setpriv
 * CAP_SETUID, CAP_SETGID (the ids, the groups) and CAP_SETPCAP (the bounding
 * set). Seccomp (the container's RuntimeDefault) and the AppArmor/SELinux
 * label are inherited through exec and cannot be dropped by the child.
 * The environment is empty: nothing of the agent's (kubeconfig path, tokens)
 * reaches the child.
 */

/** nobody/nogroup: the dissector's user and group. */
export const DISSECTOR_UID = 65534;
export const DISSECTOR_GID = 65534;

export interface DissectorCommandOptions {
  /** The node binary (process.execPath). */
  readonly execPath: string;
  /** Node's own flags the agent runs with (process.execArgv: `--import tsx` when run from sources). */
  readonly execArgv: readonly string[];
  /** The dissector's entry file (dist/cmd/dissect.js, or src/cmd/dissect.ts from sources). */
  readonly entry: string;
}

export interface DissectorCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/** The dissector's command line: see the module comment. */
export function dissectorCommand(o: DissectorCommandOptions): DissectorCommand {
  // flags that would open a port or a debugger in the child are not passed on
  const execArgv = o.execArgv.filter((a) => !/^--(inspect|debug)/.test(a));
  return {
    file: 'unshare',
    args: [
      '--net',
      '--',
      'setpriv',
      `--reuid=${DISSECTOR_UID}`,
      `--regid=${DISSECTOR_GID}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--ambient-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--pdeathsig=KILL',
      '--',
      o.execPath,
      ...execArgv,
      o.entry,
    ],
    env: {},
  };
}

/** What the agent reads of the running dissector: /proc/<pid>/status and the network namespace links. */
export interface DissectorSandboxView {
  readonly status: string;
  /** readlink /proc/<pid>/ns/net, e.g. net:[4026532281]. */
  readonly netns: string;
  /** readlink /proc/self/ns/net of the agent. */
  readonly agentNetns: string;
}

/** What the sandbox must be; each failed rule is one problem, naming the field. Empty: it holds. */
export function sandboxProblems(v: DissectorSandboxView): string[] {
  const problems: string[] = [];
  const fields = new Map<string, string>();
  for (const line of v.status.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  const want = (field: string, ok: (value: string) => boolean, expected: string): void => {
    const value = fields.get(field);
    if (value === undefined || !ok(value)) problems.push(`${field} is ${value === undefined ? 'missing' : JSON.stringify(value)} (expected ${expected})`);
  };
  const allIds = (id: number) => (value: string) => value.split(/\s+/).length === 4 && value.split(/\s+/).every((x) => x === String(id));
  want('Uid', allIds(DISSECTOR_UID), `${DISSECTOR_UID} four times`);
  want('Gid', allIds(DISSECTOR_GID), `${DISSECTOR_GID} four times`);
  want('Groups', (value) => value === '', 'none');
  for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) want(set, (value) => /^0+$/.test(value), 'no capability');
  want('NoNewPrivs', (value) => value === '1', '1');
  if (v.netns === v.agentNetns || !/^net:\[\d+\]$/.test(v.netns)) problems.push(`the network namespace is ${v.netns} (expected one of its own, not the agent's ${v.agentNetns})`);
  return problems;
}
