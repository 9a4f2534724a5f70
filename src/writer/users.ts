// Which user rows a group commit writes: profiles, and a bare sighting for every other user seen,
// skipping what was written within the last minute (last_seen has minute resolution) and merging
// what several requests of the batch say about one user.
import type { UserSeen } from '../base/model.js';
import { RecentProfiles } from './recent-profiles.js';
import { RecentSightings } from './recent-sightings.js';
import type { WriteRequest } from './sink.js';
import type { UserRow } from './statements.js';

const WINDOW_MS = 60_000;

export interface UsersToWrite {
  /** Bare sightings: user ids by project. */
  sightings: Map<string, string[]>;
  /** Profiles that fill in what they carry and keep the rest. */
  partial: UserRow[];
  /** Profiles from verified initData, which replace the stored ones. */
  authoritative: UserRow[];
  /** Profiles to remember once the commit succeeded (with the sightings, which every profile write also is). */
  profilesWritten: { projectId: string; userId: string; fingerprint: string }[];
}

function definedOnly(u: UserSeen): Partial<UserSeen> {
  const out: Partial<UserSeen> = {};
  for (const [k, v] of Object.entries(u)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** Ids per project: a batch seldom spans many projects, so no key string is built per user. */
function inProject<T>(byProject: Map<string, T>, projectId: string, make: () => T): T {
  let entry = byProject.get(projectId);
  if (entry === undefined) byProject.set(projectId, (entry = make()));
  return entry;
}
const newSet = () => new Set<string>();
const newList = (): string[] => [];

export class UserRows {
  private readonly profiles = new RecentProfiles(WINDOW_MS, 200_000);
  private readonly sightings = new RecentSightings(WINDOW_MS, 1 << 21);

  select(batch: readonly WriteRequest[]): UsersToWrite {
    this.profiles.tick();
    const sightings = new Map<string, string[]>();
    const partial = new Map<string, UserRow>();
    const authoritative = new Map<string, UserRow>();
    const profilesWritten: UsersToWrite['profilesWritten'] = [];
    // Profiles first: a user with a profile in this batch needs no separate sighting.
    const covered = new Map<string, Set<string>>();
    for (const { target: t, batch: b } of batch) {
      if (b.profiles.length === 0) continue;
      const target = t.authoritativeProfiles ? authoritative : partial;
      const ids = inProject(covered, t.projectId, newSet);
      for (const u of b.profiles) {
        const fingerprint = `${t.authoritativeProfiles ? 'a' : 'p'}${JSON.stringify(u)}`;
        if (this.profiles.fresh(t.projectId, u.id, fingerprint)) continue;
        ids.add(u.id);
        profilesWritten.push({ projectId: t.projectId, userId: u.id, fingerprint });
        const key = `${t.projectId}:${u.id}`;
        const prev = target.get(key);
        target.set(key, prev === undefined ? { ...u, projectId: t.projectId } : { ...prev, ...definedOnly(u) });
      }
    }
    // Most users of a busy project were sighted within the minute: that check comes first, and
    // costs no allocation.
    const now = this.sightings.seconds();
    for (const { target: t, batch: b } of batch) {
      if (b.userIds.length === 0) continue;
      const project = this.sightings.project(t.projectId);
      let ids: Set<string> | undefined;
      let sighted: string[] | undefined;
      for (const id of b.userIds) {
        if (this.sightings.freshIn(project, id, now)) continue;
        ids ??= inProject(covered, t.projectId, newSet);
        if (ids.has(id)) continue;
        ids.add(id);
        (sighted ??= inProject(sightings, t.projectId, newList)).push(id);
      }
    }
    return { sightings, partial: [...partial.values()], authoritative: [...authoritative.values()], profilesWritten };
  }

  /** After the commit that wrote them. */
  committed(users: UsersToWrite): void {
    const now = this.sightings.seconds();
    for (const [projectId, ids] of users.sightings) for (const id of ids) this.sightings.remember(projectId, id, now);
    for (const w of users.profilesWritten) {
      this.profiles.remember(w.projectId, w.userId, w.fingerprint);
      this.sightings.remember(w.projectId, w.userId, now);
    }
  }
}
