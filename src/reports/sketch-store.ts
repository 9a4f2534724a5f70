// The distinct-user sketches of each campaign and day (report_campaign_days), read, merged and written back.
import type { Tx } from '../db/connect.js';
import { Distinct } from './sketch.js';

/** One campaign's users of a day in a window, as the fold statement returns them. */
export interface SketchInput {
  kind: 'active' | 'payers';
  project_id: string;
  campaign: string;
  day: string;
  hashes: number[];
}

/** Adds a window's users to the stored sketches of their campaigns and days: read, merged here, written back. */
export async function addToSketches(tx: Tx, inputs: SketchInput[]): Promise<void> {
  if (inputs.length === 0) return;
  const rows = new Map<
    string,
    { projectId: string; day: string; campaign: string; active?: number[]; payers?: number[] }
  >();
  const keyOf = (projectId: string, day: string, campaign: string) => JSON.stringify([projectId, day, campaign]);
  for (const s of inputs) {
    const key = keyOf(s.project_id, s.day, s.campaign);
    const row = rows.get(key) ?? { projectId: s.project_id, day: s.day, campaign: s.campaign };
    row[s.kind] = s.hashes;
    rows.set(key, row);
  }
  const list = [...rows.values()];
  // Days travel as text, cast by PostgreSQL: eventDate reaches years 1 to 9999 in any offset, so a day can be
  // '0001-12-31 BC', which a JavaScript Date (postgres.js's date[] serialiser) cannot hold.
  const stored = await tx<
    { project_id: string; day: string; campaign: string; active: Buffer | null; payers: Buffer | null }[]
  >`
    SELECT d.project_id, d.day::text, d.campaign, d.active, d.payers
    FROM unnest(${list.map((r) => r.projectId)}::uuid[], ${list.map((r) => r.day)}::text[]::date[], ${list.map((r) => r.campaign)}::text[])
      AS k(project_id, day, campaign)
    JOIN report_campaign_days d USING (project_id, day, campaign)`;
  const before = new Map(stored.map((s) => [keyOf(s.project_id, s.day, s.campaign), s]));
  const merged = (old: Buffer | null | undefined, hashes: number[] | undefined): string | null => {
    if (hashes === undefined) return null;
    const d = new Distinct();
    if (old) d.addSketch(old);
    for (const h of hashes) d.addHash(h);
    return Buffer.from(d.encode()).toString('hex');
  };
  const active: (string | null)[] = [];
  const payers: (string | null)[] = [];
  for (const [key, r] of [...rows]) {
    const old = before.get(key);
    active.push(merged(old?.active, r.active));
    payers.push(merged(old?.payers, r.payers));
  }
  await tx`
    INSERT INTO report_campaign_days AS d (project_id, day, campaign, active, payers)
    SELECT project_id, day, campaign, decode(active, 'hex'), decode(payers, 'hex')
    FROM unnest(${list.map((r) => r.projectId)}::uuid[], ${list.map((r) => r.day)}::text[]::date[], ${list.map((r) => r.campaign)}::text[],
                ${active}::text[], ${payers}::text[]) AS k(project_id, day, campaign, active, payers)
    ON CONFLICT (project_id, day, campaign) DO UPDATE SET
      active = coalesce(excluded.active, d.active), payers = coalesce(excluded.payers, d.payers)`;
}
