/**
 * How the rig runs the real Ironic as ironic-image runs it, as data: its
 * environment contract (IRONIC_IP, the listen and access ports, HTTP_PORT,
 * LISTEN_ALL_INTERFACES) turned into the URLs ironic-image's
 * scripts/ironic-common.sh builds, and the ironic.conf its
 * ironic-config/ironic.conf.j2 renders from them — for the settings that
 * matter without containers: SQLite, noauth, no RPC bus (API and conductor in
 * one `ironic` process), no DHCP provider (ironet is the DHCP server), the
 * iPXE boot interface, the redfish hardware type, and the HTTP root that
 * ironic-image's httpd container serves. Written from their semantics (see
 * docs/peers.md "Ironic"); none of their text is copied. Pure: no I/O.
 *
 * Not reproduced: TLS, MariaDB, JSON-RPC, basic auth, IPA image discovery,
 * the ironic-networking service, the ipmi and idrac hardware types (no
 * ipmitool and no iDRAC here: every interface family is listed without them,
 * which is also what lets Ironic load without ipmitool on the path).
 */
import path from 'node:path';

/** ironic-image's environment, as far as the rig reproduces it. */
export interface IronicEnv {
  /** IRONIC_IP: the address hosts reach Ironic on (the VIP, behind ironet). */
  readonly ironicIp: string;
  /** IRONIC_LISTEN_PORT (the API's port; ironic-image: IRONIC_ACCESS_PORT, 6385). */
  readonly listenPort?: number;
  /** IRONIC_ACCESS_PORT, in the URLs handed out (default: the listen port). */
  readonly accessPort?: number;
  /** HTTP_PORT: the httpd serving the HTTP root (ironic-image defaults to 80; Metal3's manifests set 6180). */
  readonly httpPort?: number;
  /** LISTEN_ALL_INTERFACES: 'all' binds the API to `::`; default 'ironicIp' binds it to IRONIC_IP. */
  readonly listen?: 'ironicIp' | 'all';
  /** IRONIC_CONDUCTOR_HOST (default: IRONIC_IP as it appears in URLs). */
  readonly conductorHost?: string;
  /** IRONIC_FAST_TRACK (default 'true', as ironic-image). */
  readonly fastTrack?: 'true' | 'false';
  /** IRONIC_AUTOMATED_CLEAN (default 'true', as ironic-image). */
  readonly automatedClean?: 'true' | 'false';
}

export const IRONIC_DEFAULT_PORT = 6385;
export const IRONIC_HTTP_DEFAULT_PORT = 6180;

/** What ironic-common.sh derives from the environment. */
export interface IronicUrls {
  /** IRONIC_URL_HOST: the IP, bracketed when IPv6. */
  readonly urlHost: string;
  /** IRONIC_BASE_URL: the API as hosts and BMO reach it. */
  readonly baseUrl: string;
  /** IRONIC_HTTP_URL: the HTTP root as hosts reach it ([deploy] http_url). */
  readonly httpUrl: string;
  /** The API's bind address ([api] host_ip) and port. */
  readonly bindHost: string;
  readonly listenPort: number;
  readonly httpPort: number;
}

export function ironicUrls(env: IronicEnv): IronicUrls {
  const urlHost = env.ironicIp.includes(':') ? `[${env.ironicIp}]` : env.ironicIp;
  const listenPort = env.listenPort ?? IRONIC_DEFAULT_PORT;
  const accessPort = env.accessPort ?? listenPort;
  const httpPort = env.httpPort ?? IRONIC_HTTP_DEFAULT_PORT;
  return {
    urlHost,
    baseUrl: `http://${urlHost}:${accessPort}`,
    httpUrl: `http://${urlHost}:${httpPort}`,
    bindHost: (env.listen ?? 'ironicIp') === 'all' ? '::' : env.ironicIp,
    listenPort,
    httpPort,
  };
}

/** The folders of one Ironic run (ironic-image's /shared and its database folder). */
export interface IronicPaths {
  /** The SQLite database file. */
  readonly database: string;
  /** [deploy] http_root: what the httpd serves (boot.ipxe, per-node iPXE scripts, images). */
  readonly httpRoot: string;
  readonly tftpRoot: string;
  /** Ironic's temporary folder (on the same file system as the HTTP root, for hard links). */
  readonly tempDir: string;
}

export function ironicPaths(runDir: string): IronicPaths {
  return {
    database: path.join(runDir, 'ironic.sqlite'),
    httpRoot: path.join(runDir, 'html'),
    tftpRoot: path.join(runDir, 'tftpboot'),
    tempDir: path.join(runDir, 'tmp'),
  };
}

/** Hardware types and interfaces: ironic-image's lists without ipmi/ipmitool and idrac. */
const INTERFACES: ReadonlyArray<readonly [string, string]> = [
  ['enabled_hardware_types', 'redfish,fake-hardware,manual-management'],
  ['enabled_bios_interfaces', 'no-bios,redfish'],
  ['enabled_boot_interfaces', 'ipxe,pxe,fake,redfish-virtual-media,redfish-https'],
  ['default_boot_interface', 'ipxe'],
  ['enabled_deploy_interfaces', 'autodetect,direct,fake,ramdisk,custom-agent,bootc'],
  ['default_deploy_interface', 'autodetect'],
  ['autodetect_deploy_interfaces', 'ramdisk,bootc,direct'],
  ['enabled_firmware_interfaces', 'no-firmware,fake,redfish'],
  ['enabled_inspect_interfaces', 'no-inspect,agent,fake,redfish'],
  ['default_inspect_interface', 'agent'],
  ['enabled_management_interfaces', 'fake,redfish,noop'],
  ['enabled_network_interfaces', 'noop'],
  ['default_network_interface', 'noop'],
  ['enabled_power_interfaces', 'fake,redfish'],
  ['enabled_raid_interfaces', 'no-raid,agent,fake,redfish'],
  ['enabled_vendor_interfaces', 'no-vendor,redfish,fake'],
  // not listed by ironic-image (its defaults load there); explicit here so that every family loads
  ['enabled_console_interfaces', 'no-console,fake'],
  ['enabled_rescue_interfaces', 'no-rescue,fake'],
  ['enabled_storage_interfaces', 'noop,fake'],
];

type Section = readonly [name: string, options: ReadonlyArray<readonly [string, string]>];

/** The ironic.conf of one run, as INI text. */
export function renderIronicConf(env: IronicEnv, paths: IronicPaths): string {
  const u = ironicUrls(env);
  const sections: Section[] = [
    ['DEFAULT', [
      ['auth_strategy', 'noauth'],
      ['rpc_transport', 'none'],
      ['use_stderr', 'true'],
      ['debug', 'false'],
      ['hash_ring_algorithm', 'sha256'],
      ['my_ip', env.ironicIp],
      ['host', env.conductorHost ?? u.urlHost],
      ['tempdir', paths.tempDir],
      ...INTERFACES,
    ]],
    ['api', [
      ['host_ip', u.bindHost],
      ['port', String(u.listenPort)],
      // one API worker: ironic-image's NUMWORKERS=0 means one per CPU, too many for a test rig
      ['api_workers', '1'],
    ]],
    ['conductor', [
      ['automated_clean', env.automatedClean ?? 'true'],
      ['deploy_callback_timeout', '4800'],
      ['node_history', 'False'],
      ['power_state_change_timeout', '120'],
    ]],
    ['database', [
      ['connection', `sqlite:///${paths.database}`],
      ['sqlite_synchronous', 'False'],
    ]],
    ['deploy', [
      ['default_boot_option', 'local'],
      ['http_root', paths.httpRoot],
      ['http_url', u.httpUrl],
      ['fast_track', env.fastTrack ?? 'true'],
    ]],
    ['dhcp', [['dhcp_provider', 'none']]],
    ['inspector', [['require_managed_boot', 'False']]],
    ['pxe', [
      ['boot_retry_timeout', '1200'],
      ['images_path', path.join(paths.httpRoot, 'tmp')],
      ['instance_master_path', path.join(paths.httpRoot, 'master_images')],
      ['tftp_root', paths.tftpRoot],
      ['tftp_master_path', path.join(paths.tftpRoot, 'master_images')],
      ['enable_netboot_fallback', 'true'],
    ]],
    ['redfish', [['use_swift', 'false']]],
    ['service_catalog', [['endpoint_override', u.baseUrl]]],
    ['nova', [['send_power_notifications', 'false']]],
  ];
  return sections.map(([name, opts]) => [`[${name}]`, ...opts.map(([k, v]) => `${k} = ${v}`)].join('\n')).join('\n\n') + '\n';
}
