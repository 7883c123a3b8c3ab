import { expect } from 'chai';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cgroupNamesPod, findPodNetns } from '../../src/host/pod-netns.js';

const UID = '1b89e388-047e-498f-8f3e-bc55209ae858';

describe('host/pod-netns: a pod\'s processes by their cgroup', () => {
  it('recognises the cgroup paths of containerd and CRI-O, cgroupfs and systemd drivers, v1 and v2', () => {
    const paths = [
      `0::/kubepods/besteffort/pod${UID}/0123abcd`,
      `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID.replaceAll('-', '_')}.slice/cri-containerd-0123.scope`,
      `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID.replaceAll('-', '_')}.slice/crio-0123.scope`,
      `0::/kubepods.slice/kubepods-pod${UID.replaceAll('-', '_')}.slice/crio-conmon-0123.scope`,
      `12:pids:/kubepods/pod${UID}/abc\n11:memory:/kubepods/pod${UID}/abc`,
      `0::/irn-pods-1/pod${UID}/sandbox`,
    ];
    for (const p of paths) expect(cgroupNamesPod(p, UID), p).to.equal(true);
  });

  it('never matches another pod, a longer id, or nothing', () => {
    const other = '2b89e388-047e-498f-8f3e-bc55209ae858';
    expect(cgroupNamesPod(`0::/kubepods/besteffort/pod${other}/x`, UID)).to.equal(false);
    expect(cgroupNamesPod(`0::/kubepods/besteffort/pod${UID}0/x`, UID)).to.equal(false);
    expect(cgroupNamesPod(`0::/kubepods/besteffort/xpod${UID}/x`, UID)).to.equal(false);
    expect(cgroupNamesPod('0::/system.slice/containerd.service', UID)).to.equal(false);
    expect(cgroupNamesPod(`0::/kubepods/pod${UID}`, '')).to.equal(false);
    expect(cgroupNamesPod('', UID)).to.equal(false);
  });

  it('finds the lowest PID of the pod in a /proc tree and its namespace identity', () => {
    const proc = mkdtempSync(path.join(tmpdir(), 'irn-proc-'));
    const add = (pid: number, cgroup: string, ns: string): void => {
      mkdirSync(path.join(proc, String(pid), 'ns'), { recursive: true });
      writeFileSync(path.join(proc, String(pid), 'cgroup'), cgroup);
      symlinkSync(ns, path.join(proc, String(pid), 'ns', 'net'));
    };
    add(900, `0::/kubepods/pod${UID}/app`, 'net:[4026532900]');
    add(120, `0::/kubepods/pod${UID}/pause`, 'net:[4026532900]');
    add(50, '0::/system.slice/sshd.service', 'net:[4026531840]');
    mkdirSync(path.join(proc, 'self'));
    expect(findPodNetns(UID, proc)).to.deep.equal({ path: path.join(proc, '120', 'ns', 'net'), pid: 120, id: 'net:[4026532900]' });
    expect(findPodNetns('0b89e388-047e-498f-8f3e-bc55209ae858', proc)).to.equal(undefined);
  });
});
