// `refusal`: what turning a request away costs the process, against its floor. At twice b-small's rate the service
// refuses more requests than it accepts (overload), on the same thread that reads and answers the accepted ones, so
// this cost is what overload's goodput lacks. Measured as CPU per answer of a process that refuses everything, under
// closed-loop load with b-small's bodies: the service's HTTP front and load shedder, and uWebSockets.js alone writing
// the same 503 (the floor, whatever the front does). Alternated, as the machine's speed drifts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from './lib/env.js';
import { load } from './lib/load.js';
import { runTail, serverBatch, stamp } from './lib/payloads.js';
import { cpuSeconds } from './lib/proc.js';

const SERVER = fileURLToPath(new URL('./refusal-server.js', import.meta.url));
const REFUSERS = ['front', 'bare'] as const;

export interface RefusalFigures {
  /** CPU µs per answer of each refuser, one figure a round. */
  cpuPerAnswer: Record<(typeof REFUSERS)[number], number[]>;
  /** Measured answers that were not 503, errors and timeouts (the front lets the warm-up's first second in). */
  otherAnswers: number;
}

export async function refusalScenario(o: {
  durationS: number;
  warmupS: number;
  rounds: number;
}): Promise<RefusalFigures> {
  const tail = runTail();
  const template = serverBatch(10, { tail, users: 20_000 });
  let counter = 0;
  const figures: RefusalFigures = { cpuPerAnswer: { front: [], bare: [] }, otherAnswers: 0 };
  for (let round = 0; round < o.rounds; round++) {
    for (const refuser of round % 2 === 0 ? REFUSERS : [...REFUSERS].reverse()) {
      const proc = spawn(process.execPath, [...NODE_FLAGS, SERVER, refuser], { stdio: ['ignore', 'pipe', 'inherit'] });
      try {
        const port = await new Promise<number>((resolve, reject) => {
          proc.once('error', reject);
          proc.once('exit', (code) => reject(new Error(`refusal server exited with ${code}`)));
          createInterface({ input: proc.stdout! }).once('line', (line) => resolve(Number(line)));
        });
        const run = (durationS: number) =>
          load({
            url: `http://127.0.0.1:${port}/tg`,
            headers: { 'Content-Type': 'application/json', 'X-API-Key': 'key' },
            connections: 50,
            durationS,
            body: () => stamp(template, counter++),
          });
        await run(o.warmupS);
        const before = cpuSeconds(proc.pid!);
        const r = await run(o.durationS);
        const answers = Object.values(r.statuses).reduce((a, n) => a + n, 0);
        figures.cpuPerAnswer[refuser].push(((cpuSeconds(proc.pid!) - before) * 1e6) / Math.max(1, answers));
        figures.otherAnswers += answers - (r.statuses['503'] ?? 0) + r.errors + r.timeouts;
      } finally {
        proc.kill('SIGTERM');
        if (proc.exitCode === null && proc.signalCode === null) await once(proc, 'exit');
      }
    }
  }
  return figures;
}
