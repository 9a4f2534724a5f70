// Funnels: per step, the users who reached it in order within windowS of their first step, read from the lake's
// Parquet files and the rows the lake has not taken yet, by the columnar engine. A user's first step may be any of
// their first-step events in the range; each later step is the earliest matching event at or after the previous one
// (strictly after when two steps in a row name the same event), which reaches as far as any choice can. The user
// counts with the start that reaches furthest (the earliest of those), and the seconds between its steps give the
// medians. Events count by eventDate, as every report does.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { HttpError } from '../base/errors.js';
import type { Sql } from '../db/connect.js';
import { type LakeEngine, literal } from '../lake/engine.js';
import { copyToCsv } from '../lake/files.js';
import { lakeView } from '../lake/reader.js';
import { eventsFromCsv, LAKE_EVENT_COLUMNS } from '../lake/rows.js';
import type { FunnelFilter, FunnelRequest } from './funnel-request.js';

export interface FunnelStepResult {
  eventName: string;
  users: number;
  conversionFromFirst: number;
  conversionFromPrevious: number;
  medianSecondsFromPrevious: number | null;
}

export interface FunnelResult {
  steps: FunnelStepResult[];
  breakdown?: { key: string | null; steps: FunnelStepResult[] }[];
}

/** Keys a breakdown lists at most, those with the most users at the first step. */
export const BREAKDOWN_MAX_KEYS = 100;
/** Times a funnel lists the files again when one went away under it (a day joined, an erasure's rewrite). */
const RELISTS = 3;
/** Funnels counted at once on an instance; another is answered 503 funnels_busy meanwhile. */
export const FUNNELS_AT_ONCE = 2;

interface Built {
  sql: string;
  params: DuckDBValue[];
}

/** The SQL of a filter over the lake's columns, its value a parameter. */
function filterSql(f: FunnelFilter, param: (v: DuckDBValue) => string): string {
  const v = param(f.value as DuckDBValue);
  const op = f.op;
  const k = f.target.bucket === 'tg' ? '' : param(f.target.key);
  switch (f.target.bucket) {
    case 'string':
      return `props_string[${k}] ${op} ${v}`;
    case 'float':
      return `props_float[${k}] ${op} ${v}`;
    case 'bool':
      return `props_bool[${k}] ${op} ${v}`;
    case 'long':
      return `coalesce(props_long[${k}]::DOUBLE, CASE WHEN channel = 'bot_api' THEN props_float[${k}] END) ${op} ${v}`;
    case 'tg': {
      const path = param(`$."${f.target.key}"`);
      const text = `json_extract_string(tg, ${path})`;
      const typed =
        f.target.type === 'string'
          ? text
          : f.target.type === 'bool'
            ? `TRY_CAST(${text} AS BOOLEAN)`
            : `TRY_CAST(${text} AS DOUBLE)`;
      return `${typed} ${op} ${v}`;
    }
  }
}

/** The funnel's SQL over `source` (a relation with the lake's columns). Pure. */
export function funnelSql(req: FunnelRequest, source: string): Built {
  const params: DuckDBValue[] = [];
  const param = (v: DuckDBValue) => {
    params.push(typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : v);
    return `$${params.length}`;
  };
  const n = req.steps.length;
  const names = req.steps.map((s) => param(s.eventName));
  const flags = req.steps.map(
    (s, i) =>
      `(event_name = ${names[i]}${s.where === null ? '' : ` AND coalesce(${filterSql(s.where, param)}, false)`}) AS s${i + 1}`,
  );
  const from = param(`${req.range.from} 00:00:00+00`);
  const to = param(`${req.range.to} 00:00:00+00`);
  const windowUs = param(BigInt(req.windowS) * 1_000_000n);
  const wantPlatform = req.by === 'platform';
  const platformName = wantPlatform ? param('app_open') : null;
  const parts: string[] = [];
  parts.push(`ev AS (
    SELECT platform_user_id AS u, epoch_us(event_date) AS t, ${flags.join(', ')}
      ${wantPlatform ? `, props_string['platform'] AS platform` : ''}
    FROM ${source}
    WHERE platform_user_id IS NOT NULL AND event_date >= ${from}::TIMESTAMPTZ
      AND event_date < ${to}::TIMESTAMPTZ + INTERVAL 1 DAY
      AND event_name IN (${[...new Set(names)].join(', ')}${platformName === null ? '' : `, ${platformName}`}))`);
  for (let i = 1; i <= n; i++) parts.push(`st${i} AS (SELECT u, t FROM ev WHERE s${i})`);
  parts.push(`c1 AS (SELECT u, t AS t1 FROM st1)`);
  for (let i = 2; i <= n; i++) {
    const strict = req.steps[i - 1]!.eventName === req.steps[i - 2]!.eventName ? '>' : '>=';
    const prev = `t${i - 1}`;
    const cols = Array.from({ length: i - 1 }, (_, k) => `c${i - 1}.t${k + 1}`).join(', ');
    parts.push(`c${i} AS (SELECT c${i - 1}.u, ${cols}, st${i}.t AS t${i}
      FROM c${i - 1} ASOF LEFT JOIN st${i} ON c${i - 1}.u = st${i}.u AND st${i}.t ${strict} c${i - 1}.${prev})`);
  }
  const reach = [
    '1',
    ...Array.from({ length: n - 1 }, (_, k) => `(t${k + 2} IS NOT NULL AND t${k + 2} - t1 <= ${windowUs})::INT`),
  ].join(' + ');
  const ts = Array.from({ length: n }, (_, k) => `t${k + 1}`);
  parts.push(`chains AS (SELECT u, ${reach} AS reach, ${ts.join(', ')} FROM c${n})`);
  parts.push(`best AS (
    SELECT u, arg_max(struct_pack(reach, ${ts.join(', ')}), reach::HUGEINT * 100000000000000000 - t1) AS b FROM chains GROUP BY u)`);
  let keyed = `SELECT u, b, NULL::VARCHAR AS key FROM best`;
  if (wantPlatform)
    parts.push(`plat AS (SELECT u, arg_min(platform, t) AS key FROM ev WHERE platform IS NOT NULL GROUP BY u)`);
  if (wantPlatform) keyed = `SELECT best.u, b, plat.key FROM best LEFT JOIN plat USING (u)`;
  if (req.by === 'campaign') keyed = `SELECT best.u, b, camp.key FROM best LEFT JOIN camp USING (u)`;
  parts.push(`keyed AS (${keyed})`);
  const aggs = Array.from({ length: n }, (_, k) => {
    const s = k + 1;
    const users = `count(*) FILTER (WHERE b.reach >= ${s})`;
    const median = s === 1 ? 'NULL::DOUBLE' : `median((b.t${s} - b.t${s - 1}) / 1e6) FILTER (WHERE b.reach >= ${s})`;
    return `${users} AS users${s}, ${median} AS median${s}`;
  });
  const select =
    req.by === null
      ? `SELECT true AS total, ${aggs.join(', ')} FROM keyed`
      : `SELECT key, GROUPING(key) = 1 AS total, ${aggs.join(', ')} FROM keyed GROUP BY ROLLUP (key)`;
  return { sql: `WITH ${parts.join(',\n')}\n${select}`, params };
}

function stepsOf(req: FunnelRequest, row: Record<string, unknown>): FunnelStepResult[] {
  const users = req.steps.map((_, k) => Number(row[`users${k + 1}`] ?? 0));
  return req.steps.map((s, k) => {
    const m = row[`median${k + 1}`];
    return {
      eventName: s.eventName,
      users: users[k]!,
      conversionFromFirst: k === 0 ? (users[0]! > 0 ? 1 : 0) : users[0]! > 0 ? users[k]! / users[0]! : 0,
      conversionFromPrevious: k === 0 ? 1 : users[k - 1]! > 0 ? users[k]! / users[k - 1]! : 0,
      medianSecondsFromPrevious: k === 0 || m === null || m === undefined ? null : Number(m),
    };
  });
}

export interface FunnelReaderOptions {
  dir: string;
  timeoutMs: number;
  /** Where the rows read from the database wait for the engine. */
  tempDir: string;
}

export class FunnelReader {
  private running = 0;

  constructor(
    private readonly sql: Sql,
    private readonly engine: LakeEngine,
    private readonly opts: FunnelReaderOptions,
  ) {
    // What funnels a crash interrupted left behind (rows of events): gone before any funnel runs.
    mkdirSync(opts.tempDir, { recursive: true });
    for (const n of readdirSync(opts.tempDir))
      if (n.startsWith('funnel-')) rmSync(join(opts.tempDir, n), { recursive: true, force: true });
  }

  async funnel(projectId: string, req: FunnelRequest): Promise<FunnelResult> {
    if (this.running >= FUNNELS_AT_ONCE) throw new HttpError('funnels_busy', { retryAfterS: 1 });
    this.running++;
    try {
      const deadline = Date.now() + this.opts.timeoutMs;
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.once(projectId, req, deadline);
        } catch (err) {
          // A file that went away between the listing and the read: listed again.
          if (attempt < RELISTS && /No such file|does not exist|cannot open file/i.test((err as Error).message))
            continue;
          throw err;
        }
      }
    } finally {
      this.running--;
    }
  }

  private async once(projectId: string, req: FunnelRequest, deadline: number): Promise<FunnelResult> {
    const temp = mkdtempSync(join(this.opts.tempDir, 'funnel-'));
    const c = await this.engine.connect();
    const timer = setTimeout(() => c.interrupt(), Math.max(1, deadline - Date.now()));
    try {
      const names = [...new Set(req.steps.map((s) => s.eventName)), ...(req.by === 'platform' ? ['app_open'] : [])];
      const where = `event_name IN (${names.map(literal).join(', ')})
        AND event_date >= ${literal(req.range.from)}::date AND event_date < ${literal(req.range.to)}::date + 1
        AND platform_user_id IS NOT NULL`;
      const view = await lakeView(
        this.sql,
        this.opts.dir,
        projectId,
        where,
        join(temp, 'tail.csv'),
        deadline - Date.now(),
      );
      const columns = LAKE_EVENT_COLUMNS.join(', ');
      const sources: string[] = [];
      if (view !== null && view.files.length > 0)
        sources.push(
          `SELECT ${columns} FROM read_parquet([${view.files.map(literal).join(', ')}], hive_partitioning = false, union_by_name = true)`,
        );
      if (view?.tail) sources.push(`SELECT ${columns} FROM (${eventsFromCsv(view.tail)})`);
      if (sources.length === 0) return empty(req);
      if (req.by === 'campaign') await this.loadCampaigns(c, projectId, temp, deadline);
      const { sql, params } = funnelSql(req, `(${sources.join(' UNION ALL ')})`);
      const rows = (await c.runAndReadAll(sql, params)).getRowObjects() as Record<string, unknown>[];
      const total = rows.find((r) => r.total === true);
      const result: FunnelResult = { steps: stepsOf(req, total ?? {}) };
      if (req.by !== null) {
        const groups = rows.filter((r) => r.total !== true);
        groups.sort((a, b) => Number(b.users1) - Number(a.users1));
        result.breakdown = groups.slice(0, BREAKDOWN_MAX_KEYS).map((r) => ({
          key: r.key === null ? null : String(r.key),
          steps: stepsOf(req, r),
        }));
      }
      return result;
    } catch (err) {
      if (Date.now() >= deadline || /interrupt/i.test((err as Error).message)) throw new HttpError('funnel_timeout');
      throw err;
    } finally {
      clearTimeout(timer);
      c.closeSync();
      rmSync(temp, { recursive: true, force: true });
    }
  }

  /** The users' first campaigns, as the reports file them, for a breakdown by campaign. */
  private async loadCampaigns(c: DuckDBConnection, projectId: string, temp: string, deadline: number): Promise<void> {
    const file = join(temp, 'campaigns.csv');
    const conn = await this.sql.reserve();
    try {
      // In a transaction of its own: its settings end with it, never left on a connection of the pool.
      await conn.unsafe('BEGIN');
      try {
        await conn.unsafe(`SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(deadline - Date.now()))}`);
        await conn.unsafe('SET LOCAL standard_conforming_strings = on');
        await copyToCsv(
          conn as unknown as Sql,
          `SELECT user_id, first_campaign FROM report_users WHERE project_id = ${literal(projectId)}::uuid AND first_campaign IS NOT NULL`,
          file,
        );
        await conn.unsafe('COMMIT');
      } catch (err) {
        await conn.unsafe('ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      conn.release();
    }
    await c.run(
      `CREATE TEMP TABLE camp AS SELECT * FROM read_csv(${literal(file)}, header = false, columns = {'u': 'BIGINT', 'key': 'VARCHAR'}, delim = ',', quote = '"', escape = '"', nullstr = '', auto_detect = false)`,
    );
  }
}

function empty(req: FunnelRequest): FunnelResult {
  const steps = stepsOf(req, {});
  return req.by === null ? { steps } : { steps, breakdown: [] };
}
