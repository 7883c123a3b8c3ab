/**
 * Finds a pod's network namespace from the node's process table: a process
 * of the pod runs in a cgroup whose path names the pod's UID, under every
 * CRI runtime and cgroup driver in use —
 *   cgroupfs:  /kubepods/besteffort/pod<uid>/<container>
 *   systemd:   /kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid with _>.slice/cri-containerd-<id>.scope
 *              (crio-<id>.scope under CRI-O)
 * and every container of a pod (the sandbox's pause process included)
 * shares the pod's network namespace. Needs the host's PID namespace
 * (hostPID) to see those processes, and CAP_SYS_PTRACE to open another
 * user's /proc/<pid>/ns/net (ADR 0013).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** Whether a /proc/<pid>/cgroup text puts that process in pod `uid`'s cgroup. Pure. */
export function cgroupNamesPod(cgroupText: string, uid: string): boolean {
  const u = uid.toLowerCase();
  if (!/^[0-9a-f-]{8,}$/.test(u)) return false;
  const forms = [`pod${u}`, `pod${u.replaceAll('-', '_')}`];
  for (const line of cgroupText.split('\n')) {
    const cgPath = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1).toLowerCase();
    for (const segment of cgPath.split('/')) {
      for (const f of forms) {
        // the pod's own level: `pod<uid>` or `kubepods-<qos>-pod<uid>.slice`, never a longer id that starts with it
        const at = segment.indexOf(f);
        if (at < 0) continue;
        const after = segment.slice(at + f.length);
        if ((at === 0 || segment[at - 1] === '-') && (after === '' || after === '.slice')) return true;
      }
    }
  }
  return false;
}

export interface PodNetns {
  /** `/proc/<pid>/ns/net` of a process of the pod (its lowest PID: the sandbox's, normally). */
  readonly path: string;
  readonly pid: number;
  /** The namespace's identity (`net:[inode]`), to tell a recreated sandbox from the old one. */
  readonly id: string;
}

/** The network namespace of pod `uid`, or undefined when no process of it runs on this node (yet). */
export function findPodNetns(uid: string, procRoot = '/proc'): PodNetns | undefined {
  let best: number | undefined;
  for (const entry of readdirSync(procRoot)) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (best !== undefined && pid > best) continue;
    let text: string;
    try {
      text = readFileSync(path.join(procRoot, entry, 'cgroup'), 'utf8');
    } catch {
      continue; // exited meanwhile, or not ours to read
    }
    if (cgroupNamesPod(text, uid)) best = pid;
  }
  if (best === undefined) return undefined;
  const nsPath = path.join(procRoot, String(best), 'ns', 'net');
  try {
    return { path: nsPath, pid: best, id: readlinkSync(nsPath) };
  } catch {
    return undefined; // exited between the scan and now: the caller looks again later
  }
}
