/**
 * The files the TFTP server serves: regular files under one directory,
 * read-only. Names were already normalised by the session (relative, no `..`);
 * this checks again after resolving symlinks, so a link cannot lead out of the
 * directory. Small files (the iPXE binaries) are kept in memory, keyed by
 * size and mtime, so six machines booting at once read the disk once; the
 * cache is bounded in bytes (least recently served dropped first).
 */
import { Buffer } from 'node:buffer';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { TftpFile, TftpFiles } from '../tftp/ports.js';

export interface DirectoryFilesOptions {
  /** Files up to this size are cached in memory (bytes). */
  readonly cacheMaxFileBytes?: number;
  /** The cache holds at most this many bytes; the least recently served go first. */
  readonly cacheMaxBytes?: number;
}

interface Cached {
  readonly size: number;
  readonly mtimeMs: number;
  readonly data: Buffer;
}

export class DirectoryFiles implements TftpFiles {
  private readonly cache = new Map<string, Cached>();
  private readonly cacheMax: number;
  private readonly cacheTotalMax: number;
  private cacheBytes = 0;
  private rootReal: string | undefined;

  constructor(
    private readonly root: string,
    o: DirectoryFilesOptions = {},
  ) {
    this.cacheMax = o.cacheMaxFileBytes ?? 8 * 1024 * 1024;
    this.cacheTotalMax = o.cacheMaxBytes ?? 32 * 1024 * 1024;
  }

  async open(name: string): Promise<TftpFile | undefined> {
    this.rootReal ??= await fs.realpath(this.root);
    const root = this.rootReal;
    let real: string;
    try {
      real = await fs.realpath(path.resolve(root, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    if (real !== root && !real.startsWith(root + path.sep)) return undefined; // a symlink out of the root
    const stat = await fs.stat(real);
    if (!stat.isFile()) return undefined;
    if (stat.size <= this.cacheMax) {
      const hit = this.cache.get(real);
      let data = hit && hit.size === stat.size && hit.mtimeMs === stat.mtimeMs ? hit.data : undefined;
      if (hit) {
        // most recently served last (Map order)
        this.cache.delete(real);
        this.cacheBytes -= hit.data.length;
      }
      if (!data) data = await fs.readFile(real);
      if (!this.cache.has(real)) {
        this.cache.set(real, { size: data.length, mtimeMs: stat.mtimeMs, data });
        this.cacheBytes += data.length;
      }
      for (const [k, v] of this.cache) {
        if (this.cacheBytes <= this.cacheTotalMax) break;
        this.cache.delete(k);
        this.cacheBytes -= v.data.length;
      }
      const bytes = data;
      return { size: bytes.length, read: (offset, length) => Promise.resolve(bytes.subarray(offset, offset + length)) };
    }
    return {
      size: stat.size,
      read: async (offset, length) => {
        const fh = await fs.open(real, 'r');
        try {
          const buf = Buffer.alloc(length);
          const { bytesRead } = await fh.read(buf, 0, length, offset);
          return buf.subarray(0, bytesRead);
        } finally {
          await fh.close();
        }
      },
    };
  }
}

function isNotFound(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG';
}
