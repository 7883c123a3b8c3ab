/**
 * How the rig configures the real Ironic: the URLs ironic-image derives from
 * IRONIC_IP and its ports, and the ironic.conf settings that make one
 * `ironic` process serve without a message bus, DHCP provider or ipmitool.
 */
import { expect } from 'chai';
import { ironicPaths, ironicUrls, renderIronicConf } from '../../src/lab/ironic-plan.js';

/** The INI text as section → option → value. */
function parse(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  let section = '';
  for (const line of text.split('\n')) {
    const head = /^\[(.+)\]$/.exec(line);
    if (head) out[(section = head[1]!)] = {};
    else if (line.includes(' = ')) {
      const [k, ...v] = line.split(' = ');
      expect(out[section]![k!], `${section}.${k} set twice`).to.equal(undefined);
      out[section]![k!] = v.join(' = ');
    }
  }
  return out;
}

describe('ironic-plan', () => {
  it('derives the URLs as ironic-image does: IRONIC_IP, the access port, HTTP_PORT (6180 as Metal3 sets it)', () => {
    expect(ironicUrls({ ironicIp: '172.22.0.2' })).to.deep.equal({
      urlHost: '172.22.0.2',
      baseUrl: 'http://172.22.0.2:6385',
      httpUrl: 'http://172.22.0.2:6180',
      bindHost: '172.22.0.2',
      listenPort: 6385,
      httpPort: 6180,
    });
    const v6 = ironicUrls({ ironicIp: 'fd00::2', listenPort: 16385, accessPort: 6385, httpPort: 8080, listen: 'all' });
    expect(v6.baseUrl).to.equal('http://[fd00::2]:6385');
    expect(v6.httpUrl).to.equal('http://[fd00::2]:8080');
    expect(v6.bindHost).to.equal('::');
    expect(v6.listenPort).to.equal(16385);
  });

  it('renders one process with SQLite, noauth, no RPC bus, no DHCP provider, iPXE and redfish, and no ipmitool interface', () => {
    const conf = parse(renderIronicConf({ ironicIp: '172.22.0.2', listenPort: 6385 }, ironicPaths('/run/ironic-1')));
    expect(conf.DEFAULT).to.include({ auth_strategy: 'noauth', rpc_transport: 'none', my_ip: '172.22.0.2', host: '172.22.0.2', default_boot_interface: 'ipxe' });
    expect(conf.DEFAULT!.enabled_hardware_types!.split(',')).to.include('redfish');
    const interfaceLists = Object.entries(conf.DEFAULT!).filter(([k]) => k.startsWith('enabled_'));
    expect(interfaceLists.map(([k]) => k)).to.include.members([
      'enabled_bios_interfaces', 'enabled_boot_interfaces', 'enabled_console_interfaces', 'enabled_deploy_interfaces',
      'enabled_firmware_interfaces', 'enabled_inspect_interfaces', 'enabled_management_interfaces', 'enabled_network_interfaces',
      'enabled_power_interfaces', 'enabled_raid_interfaces', 'enabled_rescue_interfaces', 'enabled_storage_interfaces', 'enabled_vendor_interfaces',
    ]);
    for (const [k, v] of interfaceLists) expect(v, k).not.to.match(/ipmi|idrac/);
    expect(conf.database).to.deep.equal({ connection: 'sqlite:////run/ironic-1/ironic.sqlite', sqlite_synchronous: 'False' });
    expect(conf.dhcp).to.deep.equal({ dhcp_provider: 'none' });
    expect(conf.api).to.include({ host_ip: '172.22.0.2', port: '6385' });
    expect(conf.deploy).to.include({ http_root: '/run/ironic-1/html', http_url: 'http://172.22.0.2:6180', fast_track: 'true' });
    expect(conf.service_catalog).to.deep.equal({ endpoint_override: 'http://172.22.0.2:6385' });
    expect(conf.pxe!.images_path!.startsWith('/run/ironic-1/html/')).to.equal(true);
  });

  it('binds the API to :: with LISTEN_ALL_INTERFACES while the URLs keep naming IRONIC_IP (the VIP)', () => {
    const conf = parse(renderIronicConf({ ironicIp: '172.22.0.2', listen: 'all' }, ironicPaths('/r')));
    expect(conf.api!.host_ip).to.equal('::');
    expect(conf.deploy!.http_url).to.equal('http://172.22.0.2:6180');
    expect(conf.service_catalog!.endpoint_override).to.equal('http://172.22.0.2:6385');
  });
});
