// Which user rows a group commit writes: profiles, and a bare sighting for every other user seen,
// skipping what was written within the last minute (last_seen has minute resolution) and merging
// what several requests of the batch say about one user.
import type { UserSeen } from '../model.js';
import { RecentUsers } from './recent-users.js';
import type { WriteRequest } from './sink.js';
import type { UserRow } from './statements.js';

export interface UsersToWrite {
  sightings: { projects: string[]; ids: string[] };
  /** Profiles that fill in what they carry and keep the rest. */
  partial: UserRow[];
  /** Profiles from verified initData, which replace the stored ones. */
  authoritative: UserRow[];
  /** To remember once the commit succeeded. */
  written: { projectId: string; userId: string; fingerprint: string }[];
}

function definedOnly(u: UserSeen): Partial<UserSeen> {
  const out: Partial<UserSeen> = {};
  for (const [k, v] of Object.entries(u)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

export class UserRows {
  private readonly recent = new RecentUsers(60_000, 500_000);

  select(batch: readonly WriteRequest[]): UsersToWrite {
    const recent = this.recent;
    recent.tick();
    const sightings = { projects: [] as string[], ids: [] as string[] };
    const partial = new Map<string, UserRow>();
    const authoritative = new Map<string, UserRow>();
    const written: UsersToWrite['written'] = [];
    // Profiles first: a user with a profile in this batch needs no separate sighting.
    const profiled = new Set<string>();
    for (const req of batch) {
      const target = req.authoritativeProfiles ? authoritative : partial;
      for (const u of req.profiles) {
        const fingerprint = `${req.authoritativeProfiles ? 'a' : 'p'}${JSON.stringify(u)}`;
        if (recent.fresh(req.projectId, u.id, fingerprint)) continue;
        const key = `${req.projectId}:${u.id}`;
        profiled.add(key);
        written.push({ projectId: req.projectId, userId: u.id, fingerprint });
        const prev = target.get(key);
        target.set(key, prev === undefined ? { ...u, projectId: req.projectId } : { ...prev, ...definedOnly(u) });
      }
    }
    const sighted = new Set<string>();
    for (const req of batch) {
      for (const id of req.userIds) {
        if (recent.fresh(req.projectId, id)) continue;
        const key = `${req.projectId}:${id}`;
        if (profiled.has(key) || sighted.has(key)) continue;
        sighted.add(key);
        written.push({ projectId: req.projectId, userId: id, fingerprint: '' });
        sightings.projects.push(req.projectId);
        sightings.ids.push(id);
      }
    }
    return { sightings, partial: [...partial.values()], authoritative: [...authoritative.values()], written };
  }

  /** After the commit that wrote them. */
  committed(users: UsersToWrite): void {
    for (const w of users.written) this.recent.remember(w.projectId, w.userId, w.fingerprint);
  }
}
