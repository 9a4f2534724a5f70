// Whether a user is suppressed: a binary search of the project's sorted ids, which the main thread shares with the
// workers (a SharedArrayBuffer: passed with each task without a copy).

export function isSuppressed(sorted: BigInt64Array | null | undefined, userId: string | null): boolean {
  if (!sorted || sorted.length === 0 || userId === null) return false;
  let id: bigint;
  try {
    id = BigInt(userId);
  } catch {
    return false;
  }
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid]!;
    if (v === id) return true;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** Sorted ids in shared memory. */
export function sharedIds(ids: readonly string[]): BigInt64Array {
  const out = new BigInt64Array(new SharedArrayBuffer(ids.length * 8));
  ids.forEach((id, i) => {
    out[i] = BigInt(id);
  });
  return out.sort();
}
