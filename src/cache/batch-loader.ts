// Lookups that arrive in the same turn of the event loop share one query: a flood of unknown
// credentials costs the database one statement per turn, not one per request.

export function batchLoader<V>(
  loadMany: (keys: string[]) => Promise<Map<string, V>>,
  maxBatch = 500,
): (key: string) => Promise<V | null> {
  let pending = new Map<string, { resolve: (v: V | null) => void; reject: (e: unknown) => void }[]>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const batch = pending;
    pending = new Map();
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += maxBatch) {
      const slice = keys.slice(i, i + maxBatch);
      loadMany(slice).then(
        (found) => {
          for (const k of slice) for (const w of batch.get(k)!) w.resolve(found.get(k) ?? null);
        },
        (err: unknown) => {
          for (const k of slice) for (const w of batch.get(k)!) w.reject(err);
        },
      );
    }
  };
  return (key) =>
    new Promise((resolve, reject) => {
      const waiting = pending.get(key);
      if (waiting !== undefined) waiting.push({ resolve, reject });
      else pending.set(key, [{ resolve, reject }]);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
