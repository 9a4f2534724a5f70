// The embedded columnar engine (DuckDB) that writes the lake and reads it for funnels. Bounded: threads, memory, its
// spill directory; it never fetches an extension (Parquet and JSON are built in), and its settings are locked once
// made, so no statement can change them.
import { mkdirSync, rmSync } from 'node:fs';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

export interface EngineOptions {
  threads: number;
  memoryMb: number;
  /** Where it may spill; emptied when the engine opens. */
  tempDir: string;
  /** How much it may spill there. */
  tempMaxMb: number;
}

export class LakeEngine {
  private instance: Promise<DuckDBInstance> | null = null;

  constructor(private readonly opts: EngineOptions) {}

  /** A connection of its own for one task (connections are cheap; each runs one statement at a time). */
  async connect(): Promise<DuckDBConnection> {
    this.instance ??= this.open().catch((err: unknown) => {
      this.instance = null;
      throw err;
    });
    return (await this.instance).connect();
  }

  private async open(): Promise<DuckDBInstance> {
    rmSync(this.opts.tempDir, { recursive: true, force: true });
    mkdirSync(this.opts.tempDir, { recursive: true });
    const db = await DuckDBInstance.create(':memory:', {
      threads: String(this.opts.threads),
      memory_limit: `${this.opts.memoryMb}MB`,
      temp_directory: this.opts.tempDir,
      max_temp_directory_size: `${this.opts.tempMaxMb}MB`,
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'false',
      allow_community_extensions: 'false',
      // Writing a file's row groups in any order keeps memory bounded; rows need no order in the lake.
      preserve_insertion_order: 'false',
    });
    const c = await db.connect();
    // Days and stamps are UTC's, as the database's.
    await c.run("SET TimeZone = 'UTC'");
    await c.run('SET lock_configuration = true');
    c.closeSync();
    return db;
  }

  close(): void {
    const i = this.instance;
    this.instance = null;
    void i?.then((db) => db.closeSync()).catch(() => undefined);
  }
}

/** A string as an SQL literal, for the statements that take no parameters (COPY's file names). */
export function literal(s: string): string {
  if (s.includes('\0')) throw new Error('NUL in an SQL literal');
  return `'${s.replaceAll("'", "''")}'`;
}
